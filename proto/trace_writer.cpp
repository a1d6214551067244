#include "proto/trace_writer.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include "proto/input_error.h"

namespace memreplay {

// The encoding thread: takes one batch at a time (the writer fills the next meanwhile) and feeds
// it to the encoder, which nothing else touches until the batch is done.
class TraceWriter::BackgroundEncoder {
 public:
  explicit BackgroundEncoder(TraceEncoder& encoder) : encoder_(encoder), thread_([this] { run(); }) {}
  ~BackgroundEncoder() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  // Waits for the batch before to be done, then takes `batch` (leaving an empty vector there).
  void hand_over(std::vector<Event>& batch) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !busy_; });
    rethrow_error();
    std::swap(batch, work_);
    busy_ = true;
    lock.unlock();
    changed_.notify_all();
    batch.clear();
  }
  void wait_idle() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !busy_; });
    rethrow_error();
  }

 private:
  void rethrow_error() {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      changed_.wait(lock, [&] { return busy_ || stop_; });
      if (!busy_) return;
      lock.unlock();
      std::exception_ptr error;
      try {
        for (const Event& e : work_) encoder_.append(e);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !error_) error_ = error;
      busy_ = false;
      changed_.notify_all();
    }
  }

  TraceEncoder& encoder_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Event> work_;
  bool busy_ = false;  // work_ is being encoded
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

TraceHeaderFields header_fields(const proto::TraceHeader& h) {
  TraceHeaderFields fields;
  fields.source = h.source();
  fields.source_file = h.source_file();
  fields.capture_time_ns = h.capture_time_ns();
  fields.command_line = h.command_line();
  fields.pid = h.pid();
  for (const proto::DeviceInfo& d : h.devices())
    fields.devices.push_back({d.index(), d.name(), d.total_memory(), d.cap_bytes(), d.segments_of_unknown_pool(),
                              d.allocations_of_unknown_pool()});
  for (const auto& [key, value] : h.allocator_settings()) fields.allocator_settings.emplace(key, value);
  fields.producer = h.producer();
  fields.starts_mid_run = h.starts_mid_run();
  for (const proto::PoolInfo& p : h.pools())
    fields.pools.push_back({p.id(), p.kind(), p.torch_id_first(), p.torch_id_second(), p.name()});
  fields.captures_flagged = h.captures_flagged();
  return fields;
}

TraceWriter::TraceWriter(std::string path, TraceWriterOptions options)
    : path_(std::move(path)),
      file_(path_, options.atomic ? OutputFile::Mode::replace : OutputFile::Mode::in_place),
      encoder_("TraceWriter", path_, file_.fd(),
               {options.events_per_chunk, options.zstd_level, options.compression_threads}),
      background_encoding_(options.background_encoding),
      events_per_chunk_(options.events_per_chunk),
      zstd_level_(options.zstd_level),
      encoded_chunks_(options.encoded_chunks) {}

TraceWriter::~TraceWriter() {
  background_.reset();
  if (in_place_) return;
  encoder_.abandon();  // then file_ removes the temporary (atomic) or keeps the chunks written (streaming)
}

void TraceWriter::begin(const proto::TraceHeader& header) {
  encoder_.begin(header_fields(header));
  if (background_encoding_ && background_ == nullptr) {
    batch_.reserve(kBatchEvents);
    background_ = std::make_unique<BackgroundEncoder>(encoder_);
  }
}

void TraceWriter::write_encoded(const proto::TraceHeader& header, format::ChunkEncoder&& encoder,
                                const std::vector<format::ChunkRows>& rows) {
  if (!encoded_chunks_) throw std::logic_error("TraceWriter::write_encoded() without encoded_chunks");
  begin(header);
  encoder_.append_encoded(std::move(encoder), rows);
  handed_over_ = encoder_.events_appended();  // what events_appended() counts with a background encoder
  wrote_encoded_ = true;
}

void TraceWriter::append_now(const Event& event) {
  drain();
  encoder_.append(event);
}

void TraceWriter::hand_over_batch() {
  handed_over_ += batch_.size();
  background_->hand_over(batch_);
}

void TraceWriter::drain() {
  if (background_ == nullptr) return;
  if (!batch_.empty()) hand_over_batch();
  background_->wait_idle();
}

void TraceWriter::finish() {
  if (in_place_) return;
  drain();
  background_.reset();
  encoder_.finish();
  file_.commit();
  in_place_ = true;
}

}  // namespace memreplay
