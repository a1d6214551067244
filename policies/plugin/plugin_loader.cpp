#include "policies/plugin/plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>

#include "policies/plugin/memreplay_policy_plugin.h"
#include "policies/plugin/plugin_policy.h"
#include "policies/registry.h"

namespace memreplay {

std::string load_policy_plugin(const std::string& path) {
  static std::map<std::string, std::string> loaded;  // path -> policy name
  if (const auto it = loaded.find(path); it != loaded.end()) return it->second;
  const auto fail = [&](const std::string& why) -> PluginError { return PluginError("plugin " + path + ": " + why); };
  // Never closed: the registry keeps pointers into the library's table.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) throw fail(std::string("cannot load it: ") + dlerror());
  const auto entry = reinterpret_cast<memreplay_policy_plugin_entry>(dlsym(library, MEMREPLAY_POLICY_PLUGIN_SYMBOL));
  if (entry == nullptr) throw fail("no symbol '" MEMREPLAY_POLICY_PLUGIN_SYMBOL "' (not a memreplay policy plugin?)");
  const memreplay_policy_plugin* table = entry();
  if (table == nullptr) throw fail(MEMREPLAY_POLICY_PLUGIN_SYMBOL "() returned no table");
  if (table->abi_version != MEMREPLAY_POLICY_PLUGIN_ABI)
    throw fail("ABI version " + std::to_string(table->abi_version) + ", but this memreplay loads version " +
               std::to_string(MEMREPLAY_POLICY_PLUGIN_ABI));
  if (table->name == nullptr || table->create == nullptr || table->destroy == nullptr || table->allocate == nullptr ||
      table->free == nullptr)
    throw fail("its table lacks a name, create, destroy, allocate or free");
  const std::string name = table->name;
  try {
    PolicyRegistry::instance().add(
        PolicyInfo{.name = name,
                   .description = std::string(table->description ? table->description : "") + " (plugin " + path + ")",
                   .options_help = table->options_help ? table->options_help : "",
                   .factory = [table](std::string_view options,
                                      Device& device) { return make_plugin_policy(*table, options, device); },
                   .contract_option_sets = {""},
                   .releases_on_empty_cache = table->empty_cache != nullptr});
  } catch (const detail::RegistrationError& e) {
    if (PolicyRegistry::instance().find(name) != nullptr) throw fail("policy name '" + name + "' is already taken");
    throw fail(e.what());
  }
  loaded.emplace(path, name);
  return name;
}

std::vector<std::string> load_plugins_from_environment() {
  std::vector<std::string> names;
  const char* paths = std::getenv("MEMREPLAY_PLUGINS");
  if (paths == nullptr) return names;
  std::string all = paths;
  size_t start = 0;
  while (start <= all.size()) {
    const size_t end = std::min(all.find(':', start), all.size());
    if (end > start) names.push_back(load_policy_plugin(all.substr(start, end - start)));
    start = end + 1;
  }
  return names;
}

}  // namespace memreplay
