#include "results/sweep.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "proto/input_error.h"
#include "results/sweep_output.h"
#include "results/sweep_queue.h"

namespace memreplay::results {
namespace {

using Clock = std::chrono::steady_clock;

// Counts finished tasks and reports progress at most every interval.
class ProgressCounter {
 public:
  ProgressCounter(const SweepRunOptions& options, uint64_t total) : options_(options) { progress_.total = total; }
  void finished(bool failed) {
    std::lock_guard lock(mutex_);
    ++progress_.done;
    if (failed) ++progress_.failed;
    const double now = seconds();
    if (options_.on_progress && now - last_report_ >= options_.progress_interval_s) {
      last_report_ = now;
      report_locked(now);
    }
  }
  SweepProgress finish() {
    std::lock_guard lock(mutex_);
    report_locked(seconds());
    return progress_;
  }

 private:
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  void report_locked(double now) {
    progress_.seconds = now;
    if (options_.on_progress) options_.on_progress(progress_);
  }

  const SweepRunOptions& options_;
  Clock::time_point start_ = Clock::now();
  std::mutex mutex_;
  SweepProgress progress_;
  double last_report_ = 0;
};

void check_output(const SweepRunOptions& options) {
  const bool to_stdout = options.output.empty() || options.output == "-";
  if (options.resume && to_stdout) throw InputError("--resume continues a sweep written to a file: give -o FILE");
  std::error_code error;
  if (!to_stdout && !options.resume && std::filesystem::file_size(options.output, error) > 0 && !error)
    throw InputError(options.output +
                     ": the file holds results already; --resume continues that sweep, or remove it to start over");
}

std::string format_duration(double seconds) {
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s / 3600) + "h" + std::to_string(s % 3600 / 60) + "m";
}

}  // namespace

unsigned available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

SweepOutcome run_sweep(const SweepPlan& plan, const SweepRunOptions& options) {
  check_output(options);
  SweepOutcome outcome;
  const DoneTasks done = options.resume ? DoneTasks::read(options.output, true) : DoneTasks{};
  outcome.torn_bytes_cut = done.torn_bytes();
  // A first pass only counts (and checks the plan before any task runs): the progress line's total.
  uint64_t total = 0;
  for_each_task(plan, [&](SweepTask&& task) { ++(done.contains(task_key(task)) ? outcome.already_done : total); });

  ResultLines out(options.output);
  const unsigned jobs = static_cast<unsigned>(
      std::clamp<uint64_t>(options.jobs == 0 ? available_cpus() : options.jobs, 1, std::max<uint64_t>(total, 1)));
  WorkQueue queue(2 * size_t{jobs});
  SweepSettings settings = options.settings;
  settings.fit.run_grid = [&queue, jobs](const std::vector<std::function<void()>>& grid) {
    queue.run_jobs(grid, jobs - 1);
  };
  ProgressCounter counter(options, total);
  std::mutex error_mutex;
  std::exception_ptr error;  // the first failure to write the output: the sweep stops
  const auto run_task = [&](const SweepTask& task) {
    try {
      const nlohmann::json line = sweep_task_result(task, settings);
      out.write(line_text(line));
      counter.finished(line["status"] != "ok");
    } catch (...) {
      std::lock_guard lock(error_mutex);
      if (!error) error = std::current_exception();
      queue.close(true);
    }
  };
  std::vector<std::thread> workers;
  for (unsigned i = 0; i < jobs; ++i) workers.emplace_back([&] { queue.run_worker(run_task); });
  try {
    for_each_task(plan, [&](SweepTask&& task) {
      if (!done.contains(task_key(task))) queue.push(std::move(task));
    });
  } catch (...) {
    std::lock_guard lock(error_mutex);
    if (!error) error = std::current_exception();
  }
  queue.close();
  for (auto& w : workers) w.join();
  if (error) std::rethrow_exception(error);
  outcome.progress = counter.finish();
  return outcome;
}

std::string progress_line(const SweepProgress& p) {
  std::string line = "sweep: " + std::to_string(p.done) + "/" + std::to_string(p.total) + " tasks";
  if (p.failed > 0) line += " (" + std::to_string(p.failed) + " failed)";
  if (p.seconds <= 0 || p.done == 0) return line;
  const double rate = double(p.done) / p.seconds;
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", rate);
  line += ", " + std::string(text) + " tasks/s";
  line += p.done < p.total ? ", ETA " + format_duration(double(p.total - p.done) / rate)
                           : ", " + format_duration(p.seconds);
  return line;
}

}  // namespace memreplay::results
