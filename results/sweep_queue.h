// The work a sweep's threads share: tasks from the producing thread, at most `depth` waiting (the
// plan is never held whole, only this window of it), and the independent jobs of tasks already
// running (a fit's grid of replays), which a worker takes before a new task. A fleet's last tasks
// would otherwise run alone on a few threads while the rest wait for the end: the long ones' grids
// spread over every idle thread instead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "results/sweep_task.h"

namespace memreplay::results {

// One task's independent jobs, claimed one at a time by the task's own thread and by helpers.
class JobBatch {
 public:
  explicit JobBatch(std::vector<std::function<void()>> jobs) : jobs_(std::move(jobs)) {}
  // Runs jobs until none is left unclaimed (at once, when the batch is done).
  void work();
  // Until every job has run; rethrows the first exception a job threw.
  void wait();

 private:
  std::vector<std::function<void()>> jobs_;
  std::atomic<size_t> next_{0};
  std::atomic<size_t> finished_{0};
  std::mutex mutex_;
  std::condition_variable all_finished_;
  std::exception_ptr error_;
};

class WorkQueue {
 public:
  explicit WorkQueue(size_t depth) : depth_(depth) {}

  // Waits for room. False when the queue was closed with drop_waiting (a worker failed).
  bool push(SweepTask&& task);
  // A worker's next work: a batch to help with, else a task (`help` is then null). False once the
  // queue is closed, nothing waits, and no task is running that could still offer jobs.
  bool pop(SweepTask& task, std::shared_ptr<JobBatch>& help);
  // The task popped last by this worker has finished.
  void task_finished();
  // A worker's whole life: pops until pop() says stop, helping with batches and handing each task
  // to `run` (which must not throw: the task is finished after it returns).
  void run_worker(const std::function<void(const SweepTask&)>& run);
  // Runs `jobs` on this thread and on up to `helpers` idle workers; returns when all have run.
  void run_jobs(const std::vector<std::function<void()>>& jobs, size_t helpers);
  // No more tasks; with `drop_waiting`, those waiting are dropped too (a worker failed).
  void close(bool drop_waiting = false);

 private:
  size_t depth_;
  std::mutex mutex_;
  std::condition_variable ready_, room_;
  std::deque<SweepTask> tasks_;
  std::deque<std::shared_ptr<JobBatch>> batches_;  // one entry per helper a batch may take
  size_t running_ = 0;  // tasks popped and not finished
  bool closed_ = false;
  bool dropped_ = false;
};

}  // namespace memreplay::results
