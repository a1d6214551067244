// What a fleet sweep runs: traces (paths, glob patterns, manifests) x policies x capacities, cut
// into shards. Tasks are produced one at a time, never all held: a manifest is read line by line,
// a glob expanded only when reached, so a plan over a million traces costs the memory of one.
//
// A manifest is a text file of one trace a line: `NAME<TAB>PATH`, or `PATH` alone (its name is
// then the path as written). A relative path is relative to the manifest's folder; blank lines
// and lines starting with '#' are skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "results/sweep_task.h"

namespace memreplay::results {

// Shard `index` of `count` (0 <= index < count): the tasks whose key hashes to it, so `count`
// processes given the same plan and indexes 0..count-1 run every task exactly once.
struct SweepShard {
  uint64_t index = 0;
  uint64_t count = 1;
  bool holds(std::string_view task_key) const { return count <= 1 || stable_hash(task_key) % count == index; }
};
// "I/N"; throws InputError naming the text.
SweepShard parse_shard(std::string_view text);

struct NamedTrace {
  std::string name;
  std::string path;
};

struct SweepPlan {
  std::vector<std::string> traces;  // paths and glob patterns (*, ? or [ in them), in order
  std::vector<NamedTrace> named_traces;  // each with a name of its own (--name, the Python API)
  std::vector<std::string> manifests;
  std::vector<std::string> policies;  // specs, `all` expanded (expand_policies)
  std::vector<SweepCapacity> capacities;
  SweepShard shard;
};

// The specs as `compare` expands them (expand_policy_specs: `all`, or none, is every registered
// policy), each checked: InputError naming a spec whose policy is not registered, before any task.
std::vector<std::string> expand_policies(const std::vector<std::string>& specs);

// Calls visit(path, name) for every trace of the plan: the paths as given, each glob's matches
// sorted, the named traces, each manifest's lines in order. Throws InputError for a glob that matches nothing, an
// unreadable manifest or a bad line (naming the manifest and the line).
void for_each_trace(const SweepPlan& plan, const std::function<void(std::string path, std::string name)>& visit);

// Calls visit(task) for every task of the plan's shard: for each trace, each policy, each capacity.
void for_each_task(const SweepPlan& plan, const std::function<void(SweepTask&&)>& visit);

}  // namespace memreplay::results
