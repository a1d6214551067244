// The sweep's work queue: a running task's jobs run once each, on its own thread and on idle
// workers; a worker ends only when no task is left that could still offer jobs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "results/sweep_queue.h"

namespace memreplay {
namespace {

using results::SweepTask;
using results::WorkQueue;

// Workers as the sweep runs them, each task's body `run`.
template <typename Run>
std::vector<std::thread> start_workers(WorkQueue& queue, int count, Run run) {
  std::vector<std::thread> workers;
  for (int i = 0; i < count; ++i) workers.emplace_back([&queue, run] { queue.run_worker(run); });
  return workers;
}

TEST(SweepQueue, EveryJobOfEveryTaskRunsOnceAndIdleWorkersHelp) {
  constexpr int kTasks = 12, kJobs = 40;
  WorkQueue queue(4);
  std::vector<std::atomic<int>> runs(kTasks * kJobs);
  std::atomic<int> helped{0};
  auto workers = start_workers(queue, 4, [&](const SweepTask& task) {
    const int t = std::stoi(task.name);
    const auto owner = std::this_thread::get_id();
    std::vector<std::function<void()>> jobs;
    for (int j = 0; j < kJobs; ++j)
      jobs.emplace_back([&, t, j, owner] {
        ++runs[t * kJobs + j];
        if (std::this_thread::get_id() != owner) ++helped;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      });
    queue.run_jobs(jobs, 3);
  });
  for (int t = 0; t < kTasks; ++t) queue.push(SweepTask{"", std::to_string(t), "pytorch", {}});
  queue.close();
  for (auto& w : workers) w.join();
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << i;
  EXPECT_GT(helped.load(), 0);  // the last tasks' jobs, at least, ran on idle workers
}

TEST(SweepQueue, AJobsExceptionReachesTheTaskAfterEveryJobRan) {
  WorkQueue queue(2);
  std::atomic<int> ran{0};
  std::atomic<int> caught{0};
  auto workers = start_workers(queue, 3, [&](const SweepTask&) {
    std::vector<std::function<void()>> jobs;
    for (int j = 0; j < 8; ++j)
      jobs.emplace_back([&, j] {
        ++ran;
        if (j == 2) throw std::runtime_error("bad replay");
      });
    try {
      queue.run_jobs(jobs, 2);
    } catch (const std::runtime_error&) {
      ++caught;
    }
  });
  queue.push(SweepTask{"", "0", "pytorch", {}});
  queue.close();
  for (auto& w : workers) w.join();
  EXPECT_EQ(ran.load(), 8);
  EXPECT_EQ(caught.load(), 1);
}

TEST(SweepQueue, WithoutTasksTheWorkersEnd) {
  WorkQueue queue(2);
  auto workers = start_workers(queue, 3, [](const SweepTask&) { FAIL() << "no task was queued"; });
  queue.close();
  for (auto& w : workers) w.join();
}

}  // namespace
}  // namespace memreplay
