// A fleet sweep on one machine: every task of a plan's shard (sweep_plan.h) run on `jobs` threads,
// each line written as its task finishes (sweep_output.h). Memory stays bounded whatever the
// fleet: tasks are produced one at a time into a queue a few tasks deep, each task opens its
// trace and drops it when done. With `resume`, tasks the output already holds are skipped, so a
// killed sweep continues where it stopped and writes no task twice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "results/sweep_plan.h"
#include "results/sweep_task.h"

namespace memreplay::results {

struct SweepProgress {
  uint64_t done = 0;  // tasks run so far by this process
  uint64_t failed = 0;  // of them, error lines
  uint64_t total = 0;  // tasks this process runs (its shard, less those already in the output)
  double seconds = 0;  // since the first task started
};

struct SweepRunOptions {
  unsigned jobs = 0;  // threads; 0: one per CPU this process may run on
  std::string output;  // JSON Lines file, or "" / "-" for stdout
  bool resume = false;  // skip the tasks `output` holds (a file that exists is refused without it)
  SweepSettings settings;
  // Called now and then (every `progress_interval_s`) and once at the end, from a worker thread.
  std::function<void(const SweepProgress&)> on_progress;
  double progress_interval_s = 0.5;
};

struct SweepOutcome {
  SweepProgress progress;  // at the end
  uint64_t already_done = 0;  // tasks of the shard skipped because the output held them
  uint64_t torn_bytes_cut = 0;  // of a torn last line, cut off the output before resuming
};

// The CPUs this process may run on (its affinity mask: what Slurm or taskset gave it).
unsigned available_cpus();

// Throws InputError before any task runs for a bad plan (a glob without matches, a bad manifest)
// or an output it may not append to; a task that fails is an error line and the sweep goes on.
SweepOutcome run_sweep(const SweepPlan& plan, const SweepRunOptions& options);

// "sweep: 120/540 tasks (2 failed), 8.4 tasks/s, ETA 50s"
std::string progress_line(const SweepProgress& progress);

}  // namespace memreplay::results
