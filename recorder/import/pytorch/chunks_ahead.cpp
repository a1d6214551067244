#include "recorder/import/pytorch/chunks_ahead.h"

#include <span>
#include <utility>

#include "recorder/import/pytorch/entry_event.h"

namespace memreplay {

ChunksAhead::ChunksAhead(uint32_t events_per_chunk, int zstd_level, size_t kept_column_bytes)
    : events_per_chunk_(events_per_chunk),
      zstd_level_(zstd_level),
      kept_column_bytes_(kept_column_bytes),
      thread_([this] { run(); }) {}

ChunksAhead::~ChunksAhead() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void ChunksAhead::stack(const std::vector<FrameText>& frames) {
  if (!abandoned_.load(std::memory_order_relaxed)) batch_.stacks.push_back(frames);
}

void ChunksAhead::entry(uint32_t device, const TraceStep& step, uint64_t time_ns, uint64_t stream, uint32_t stack) {
  if (abandoned_.load(std::memory_order_relaxed)) return;
  // An annotation's metadata is the tables' business (ChunkEncoder::take_rows), and devices are
  // merged by time only at the end.
  if (device != device_ || step.kind == EventKind::annotation) [[unlikely]] {
    if (device_ != kNoDevice || step.kind == EventKind::annotation) return abandon();
    device_ = device;  // the first entry
  }
  batch_.events[batch_.count++] = entry_event(step, device, time_ns, stream, stack, kDefaultPool);
  ++entries_;
  if (batch_.count == kBatchEvents) [[unlikely]]
    hand_over();
}

void ChunksAhead::abandon() {
  abandoned_.store(true, std::memory_order_relaxed);
  batch_.stacks = {};
  batch_.events = {};  // no slots: entry() stores nothing once abandoned
  batch_.count = 0;
}

void ChunksAhead::hand_over() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !busy_; });
  std::swap(batch_, work_);
  busy_ = true;
  lock.unlock();
  changed_.notify_all();
  batch_.stacks.clear();
  batch_.count = 0;
}

std::optional<ChunksAhead::Encoded> ChunksAhead::finish() {
  if (!abandoned_.load(std::memory_order_relaxed)) hand_over();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !busy_; });
  if (abandoned_.load(std::memory_order_relaxed)) {
    drop();
    return std::nullopt;
  }
  try {
    if (encoder_.chunk_events() > 0) rows_.push_back(encoder_.take_rows());
  } catch (const std::logic_error&) {
    drop();
    return std::nullopt;
  }
  for (const format::ChunkRows& rows : rows_)
    if (!rows.columns_kept && !encoder_.compressed_matches(rows, zstd_level_)) {  // a stack came after it
      drop();
      return std::nullopt;
    }
  Encoded encoded{std::move(encoder_), std::move(rows_), std::move(sink_stacks_), entries_};
  abandon();  // nothing more to take
  return encoded;
}

void ChunksAhead::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return busy_ || stop_; });
    if (!busy_) return;
    lock.unlock();
    if (abandoned_.load(std::memory_order_relaxed))
      drop();
    else
      encode(work_);
    work_.stacks.clear();
    work_.count = 0;
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

void ChunksAhead::encode(Batch& batch) {
  try {
    for (const std::vector<FrameText>& frames : batch.stacks) sink_stacks_.push_back(encoder_.intern_stack(frames));
    for (Event& e : std::span(batch.events).first(batch.count)) {
      if (e.stack != 0) e.stack = sink_stacks_[e.stack - 1];
      encoder_.add(e);
      if (encoder_.chunk_events() == events_per_chunk_) cut_rows();
    }
  } catch (const std::exception&) {  // past the bound, or an event the encoder refuses: the output stage decides
    abandoned_.store(true, std::memory_order_relaxed);
    drop();
  }
}

// Takes the chunk's rows; compresses every chunk but the first (the tables' chunk) for the stacks
// interned so far.
void ChunksAhead::cut_rows() {
  format::ChunkRows& rows = rows_.emplace_back(encoder_.take_rows());
  if (rows_.size() > 1) {
    format::ChunkRows::Compressed compressed;
    compressor_.compress(encoder_.encode_alone(rows, compressed), zstd_level_, "ChunksAhead");
    compressed.bytes = compressor_.compressed();
    compressed.level = zstd_level_;
    held_bytes_ += compressed.bytes.size();
    rows.compressed = std::move(compressed);
  }
  const size_t columns = rows.columns.size() + rows.pool.size();
  if (rows.compressed && column_bytes_ + columns > kept_column_bytes_) {
    std::string().swap(rows.columns);  // gives the buffer back (assigning {} would keep it)
    std::string().swap(rows.pool);
    rows.columns_kept = false;
  } else {
    column_bytes_ += columns;
    held_bytes_ += columns;
  }
  if (held_bytes_ > kMaxRowBytes) throw std::length_error("rows past kMaxRowBytes");
}

void ChunksAhead::drop() {
  rows_ = {};
  format::ChunkEncoder empty;
  std::swap(encoder_, empty);  // the old encoder's buffers go with `empty` (a move-assignment keeps a string's)
  sink_stacks_ = {};
}

}  // namespace memreplay
