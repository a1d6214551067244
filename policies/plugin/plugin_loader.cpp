#include "policies/plugin/plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include "base/text.h"
#include "policies/plugin/memreplay_policy_plugin.h"
#include "policies/plugin/plugin_guard.h"
#include "policies/plugin/plugin_policy.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

// The most of a table string memreplay reads: one line, not a whole file.
constexpr size_t kMaxTableText = 4096;

// A string of the plugin's table as one printable line of at most kMaxTableText bytes; nullopt
// when it is longer, has a control character (a newline) or bytes that are not UTF-8. Null is "".
std::optional<std::string> table_text(const char* text) {
  if (text == nullptr) return std::string();
  const size_t length = strnlen(text, kMaxTableText + 1);
  if (length > kMaxTableText) return std::nullopt;
  std::string line(text, length);
  if (!is_printable_utf8(line)) return std::nullopt;
  return line;
}

struct TableTexts {
  std::string name, description, options_help;
};

// The table's three strings, each one printable line; the name also non-empty and without ':'.
// Reading them reads the plugin's memory: a plugin call.
TableTexts read_table_texts(const memreplay_policy_plugin& table, const std::string& who,
                            const std::function<PluginError(const std::string&)>& fail) {
  const PluginCallScope call(who.c_str(), "table", /*while_loading=*/true);
  const std::string rule = " is not one line of printable UTF-8 (no control characters, at most " +
                           std::to_string(kMaxTableText) + " bytes)";
  const std::optional<std::string> name = table_text(table.name);
  if (!name || name->empty() || name->find(':') != std::string::npos)
    throw fail("its policy name '" + escape_unprintable(std::string_view(table.name, strnlen(table.name, 64))) + "'" +
               rule + ", or is empty, or has a ':'");
  TableTexts texts{*name, "", ""};
  for (const auto& [field, text, out] : {std::tuple{"description", table.description, &texts.description},
                                         std::tuple{"options_help", table.options_help, &texts.options_help}}) {
    const std::optional<std::string> line = table_text(text);
    if (!line) throw fail(std::string("its ") + field + rule);
    *out = *line;
  }
  return texts;
}

}  // namespace

std::string load_policy_plugin(const std::string& path) {
  static std::map<std::string, std::string> loaded;  // path -> policy name
  if (const auto it = loaded.find(path); it != loaded.end()) return it->second;
  const std::string who = "plugin " + escape_unprintable(path);
  const std::function<PluginError(const std::string&)> fail = [&](const std::string& why) {
    return PluginError(who + ": " + why);
  };
  // The library's constructors and its table function are plugin calls: a crash or an exit in
  // them is contained as in any other (plugin_guard.h).
  void* library = nullptr;
  {
    const PluginCallScope call(who.c_str(), "loading (dlopen, its constructors)", /*while_loading=*/true);
    // Never closed: the registry keeps pointers into the library's table.
    library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (library == nullptr) throw fail(std::string("cannot load it: ") + escape_unprintable(dlerror()));
  const auto entry = reinterpret_cast<memreplay_policy_plugin_entry>(dlsym(library, MEMREPLAY_POLICY_PLUGIN_SYMBOL));
  if (entry == nullptr) throw fail("no symbol '" MEMREPLAY_POLICY_PLUGIN_SYMBOL "' (not a memreplay policy plugin?)");
  const memreplay_policy_plugin* table = nullptr;
  {
    const PluginCallScope call(who.c_str(), MEMREPLAY_POLICY_PLUGIN_SYMBOL "() call", /*while_loading=*/true);
    table = entry();
  }
  if (table == nullptr) throw fail(MEMREPLAY_POLICY_PLUGIN_SYMBOL "() returned no table");
  if (table->abi_version != MEMREPLAY_POLICY_PLUGIN_ABI)
    throw fail("ABI version " + std::to_string(table->abi_version) + ", but this memreplay loads version " +
               std::to_string(MEMREPLAY_POLICY_PLUGIN_ABI));
  if (table->name == nullptr || table->create == nullptr || table->destroy == nullptr || table->allocate == nullptr ||
      table->free == nullptr)
    throw fail("its table lacks a name, create, destroy, allocate or free");
  const TableTexts texts = read_table_texts(*table, who, fail);
  try {
    PolicyRegistry::instance().add(
        PolicyInfo{.name = texts.name,
                   .description = texts.description + " (" + who + ")",
                   .options_help = texts.options_help,
                   .factory = [table](std::string_view options,
                                      Device& device) { return make_plugin_policy(*table, options, device); },
                   .contract_option_sets = {""},
                   .releases_on_empty_cache = table->empty_cache != nullptr,
                   .models_torch_version = "",
                   .plugin = who});
  } catch (const detail::RegistrationError& e) {
    if (PolicyRegistry::instance().find(texts.name) != nullptr)
      throw fail("policy name '" + texts.name + "' is already taken");
    throw fail(e.what());
  }
  loaded.emplace(path, texts.name);
  return texts.name;
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
