#include "results/sweep_queue.h"

namespace memreplay::results {

void JobBatch::work() {
  for (size_t i; (i = next_.fetch_add(1)) < jobs_.size();) {
    try {
      jobs_[i]();
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    if (finished_.fetch_add(1) + 1 == jobs_.size()) {
      std::lock_guard lock(mutex_);  // the waiter checks under it: the notice cannot be missed
      all_finished_.notify_all();
    }
  }
}

void JobBatch::wait() {
  std::unique_lock lock(mutex_);
  all_finished_.wait(lock, [&] { return finished_.load() == jobs_.size(); });
  if (error_) std::rethrow_exception(error_);
}

bool WorkQueue::push(SweepTask&& task) {
  std::unique_lock lock(mutex_);
  room_.wait(lock, [&] { return tasks_.size() < depth_ || closed_; });
  if (dropped_) return false;
  tasks_.push_back(std::move(task));
  ready_.notify_one();
  return true;
}

bool WorkQueue::pop(SweepTask& task, std::shared_ptr<JobBatch>& help) {
  std::unique_lock lock(mutex_);
  ready_.wait(lock, [&] { return !batches_.empty() || !tasks_.empty() || (closed_ && running_ == 0); });
  if (!batches_.empty()) {
    help = std::move(batches_.front());
    batches_.pop_front();
    return true;
  }
  help = nullptr;
  if (tasks_.empty()) return false;
  task = std::move(tasks_.front());
  tasks_.pop_front();
  ++running_;
  room_.notify_one();
  return true;
}

void WorkQueue::task_finished() {
  std::lock_guard lock(mutex_);
  if (--running_ == 0 && closed_) ready_.notify_all();  // idle workers may now end
}

void WorkQueue::run_worker(const std::function<void(const SweepTask&)>& run) {
  SweepTask task;
  std::shared_ptr<JobBatch> help;
  while (pop(task, help)) {
    if (help) {
      help->work();
      continue;
    }
    run(task);
    task_finished();
  }
}

void WorkQueue::run_jobs(const std::vector<std::function<void()>>& jobs, size_t helpers) {
  const auto batch = std::make_shared<JobBatch>(jobs);
  helpers = std::min(helpers, jobs.size() - std::min<size_t>(jobs.size(), 1));
  if (helpers > 0) {
    std::lock_guard lock(mutex_);
    if (!dropped_) {
      batches_.insert(batches_.end(), helpers, batch);
      ready_.notify_all();
    }
  }
  batch->work();
  batch->wait();
}

void WorkQueue::close(bool drop_waiting) {
  std::lock_guard lock(mutex_);
  closed_ = true;
  if (drop_waiting) {
    dropped_ = true;
    tasks_.clear();
  }
  ready_.notify_all();
  room_.notify_all();
}

}  // namespace memreplay::results
