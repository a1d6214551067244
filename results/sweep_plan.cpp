#include "results/sweep_plan.h"

#include <glob.h>

#include <charconv>
#include <filesystem>
#include <fstream>

#include "policies/registry.h"
#include "proto/input_error.h"
#include "results/compare.h"
#include "results/replay_batch.h"

namespace memreplay::results {
namespace {

bool is_glob(std::string_view text) { return text.find_first_of("*?[") != std::string_view::npos; }

std::optional<uint64_t> parse_unsigned(std::string_view text) {
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

void for_each_glob_match(const std::string& pattern, const std::function<void(std::string, std::string)>& visit) {
  glob_t found{};
  const int status = ::glob(pattern.c_str(), 0, nullptr, &found);
  std::vector<std::string> paths(found.gl_pathv, found.gl_pathv + found.gl_pathc);
  ::globfree(&found);
  if (status == GLOB_NOMATCH || paths.empty()) throw InputError("'" + pattern + "': no trace matches this pattern");
  if (status != 0)
    throw InputError("'" + pattern + "': the pattern cannot be expanded (glob error " + std::to_string(status) + ")");
  for (auto& path : paths) visit(path, path);
}

void for_each_manifest_line(const std::string& manifest, const std::function<void(std::string, std::string)>& visit) {
  std::ifstream in(manifest);
  if (!in) throw InputError(manifest + ": cannot read the manifest");
  const std::filesystem::path folder = std::filesystem::path(manifest).parent_path();
  std::string line;
  for (uint64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    std::string name = tab == std::string::npos ? line : line.substr(0, tab);
    std::string path = tab == std::string::npos ? line : line.substr(tab + 1);
    if (name.empty() || path.empty() || path.find('\t') != std::string::npos)
      throw InputError(manifest + ": line " + std::to_string(number) + ": expected NAME<TAB>PATH or PATH, got '" +
                       line + "'");
    if (std::filesystem::path(path).is_relative() && !folder.empty()) path = (folder / path).string();
    visit(std::move(path), std::move(name));
  }
  if (in.bad()) throw InputError(manifest + ": reading the manifest failed");
}

}  // namespace

SweepShard parse_shard(std::string_view text) {
  const size_t slash = text.find('/');
  const auto index = slash == std::string_view::npos ? std::nullopt : parse_unsigned(text.substr(0, slash));
  const auto count = slash == std::string_view::npos ? std::nullopt : parse_unsigned(text.substr(slash + 1));
  if (!index || !count || *count == 0 || *index >= *count)
    throw InputError("--shard '" + std::string(text) + "': expected I/N with 0 <= I < N, e.g. 0/4");
  return {*index, *count};
}

std::vector<std::string> expand_policies(const std::vector<std::string>& specs) {
  std::vector<std::string> out = expand_policy_specs(specs.empty() ? std::vector<std::string>{"all"} : specs);
  for (const auto& spec : out) {
    const std::string name = spec.substr(0, spec.find(':'));
    if (PolicyRegistry::instance().find(name) == nullptr)
      throw InputError("--policy '" + spec + "': no policy named '" + name + "' (see `memreplay policies`)");
  }
  return out;
}

void for_each_trace(const SweepPlan& plan, const std::function<void(std::string path, std::string name)>& visit) {
  for (const auto& trace : plan.traces) {
    if (is_glob(trace))
      for_each_glob_match(trace, visit);
    else
      visit(trace, trace);
  }
  for (const auto& [name, path] : plan.named_traces) visit(path, name);
  for (const auto& manifest : plan.manifests) for_each_manifest_line(manifest, visit);
}

void for_each_task(const SweepPlan& plan, const std::function<void(SweepTask&&)>& visit) {
  for_each_trace(plan, [&](std::string path, std::string name) {
    for (const auto& policy : plan.policies)
      for (const auto& capacity : plan.capacities) {
        SweepTask task{path, name, policy, capacity};
        if (plan.shard.holds(task_key(task))) visit(std::move(task));
      }
  });
}

}  // namespace memreplay::results
