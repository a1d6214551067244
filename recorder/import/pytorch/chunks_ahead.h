// The chunks of a snapshot's trace, their rows encoded on a thread of their own while the pickle
// is still being read, so that the output stage need not encode them after it. That holds when
// the output stage emits nothing but the entries in the order they came: one device, no state
// before the first entry, no private pools, no annotations, no inferred empty_cache. What only the
// end can tell, SnapshotOutput (pytorch_snapshot_importer.cpp) checks there, then hands the rows to
// the sink (TraceSink::write_encoded) or drops them and emits the events itself.
//
// The rows are the bytes the sink's own encoder would write: the stacks are interned in the
// reader's order (the order the output stage interns them in) ahead of the events that name them,
// and the rows are cut every events_per_chunk events, as the sink cuts its chunks; the tables and
// the first_*_id fields are joined only when the whole trace is known (ChunkEncoder::encode(rows)).
//
// Every chunk after the first (the first carries all the tables) is also compressed as it is cut,
// with the first ids that follow the stacks interned so far. Where no stack comes after, that is
// the chunk the sink writes (ChunkEncoder::compressed_matches), and only the first and the last
// chunk are left to compress at the end. Past kKeptColumnBytes of rows, a compressed chunk keeps
// only its compressed bytes, so memory follows the compressed size; if a new stack then makes
// such a chunk stale, finish() rules the rows out.
//
// What rules the rows out while reading (an annotation entry, a second device, more than
// kMaxRowBytes held) stops the encoding at once and frees what it holds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "proto/chunk_compressor.h"
#include "proto/chunk_encoder.h"
#include "proto/event.h"
#include "proto/frame_text.h"
#include "recorder/import/pytorch/snapshot_reader.h"

namespace memreplay {

class ChunksAhead final : public TraceEntryListener {
 public:
  // Rows and compressed chunks held past this many bytes are dropped: memory stays bounded on any
  // input, and the output stage encodes such a trace as it comes.
  static constexpr size_t kMaxRowBytes = size_t{256} << 20;
  // Columns kept beside the compressed chunk up to this many bytes (gpt2_generate: 7 chunks,
  // about 5 MB of rows, all kept; a chunk is about 0.7 MB of columns and 0.08 MB compressed).
  static constexpr size_t kKeptColumnBytes = size_t{8} << 20;

  // The sink's chunk format (TraceSink::ChunkFormat); `kept_column_bytes` for tests.
  ChunksAhead(uint32_t events_per_chunk, int zstd_level, size_t kept_column_bytes = kKeptColumnBytes);
  ~ChunksAhead() override;
  ChunksAhead(const ChunksAhead&) = delete;
  ChunksAhead& operator=(const ChunksAhead&) = delete;

  void stack(const std::vector<FrameText>& frames) override;
  void entry(uint32_t device, const TraceStep& step, uint64_t time_ns, uint64_t stream, uint32_t stack) override;

  struct Encoded {
    format::ChunkEncoder encoder;  // every stack interned, no events beyond the rows
    std::vector<format::ChunkRows> rows;
    std::vector<uint32_t> sink_stacks;  // local stack k is the encoder's stack sink_stacks[k - 1]
    uint64_t entries = 0;  // trace entries in the rows
  };
  // Waits for the thread to encode what it was given. Null when the rows were ruled out.
  std::optional<Encoded> finish();

 private:
  static constexpr size_t kBatchEvents = 8192;
  static constexpr uint32_t kNoDevice = UINT32_MAX;
  struct Batch {
    Batch() : events(kBatchEvents) {}
    std::vector<std::vector<FrameText>> stacks;  // new since the last batch, in order
    // kBatchEvents slots, the first `count` filled: the reader's store is then one write, with no
    // growth path (and no call) on its way. stack: the reader's local id.
    std::vector<Event> events;
    size_t count = 0;
  };

  void abandon();
  void hand_over();
  void run();
  void encode(Batch& batch);
  void cut_rows();
  void drop();  // frees the rows (the encoding thread's, or the caller's once it is idle)

  const uint32_t events_per_chunk_;
  const int zstd_level_;
  const size_t kept_column_bytes_;
  std::atomic<bool> abandoned_{false};
  uint32_t device_ = kNoDevice;  // of the first entry
  uint64_t entries_ = 0;
  Batch batch_;  // being filled by the reader

  // The encoding thread's: it alone touches these while busy_.
  Batch work_;
  format::ChunkEncoder encoder_;
  std::vector<format::ChunkRows> rows_;
  std::vector<uint32_t> sink_stacks_;
  format::ChunkCompressor compressor_;
  size_t held_bytes_ = 0, column_bytes_ = 0;

  std::mutex mutex_;
  std::condition_variable changed_;
  bool busy_ = false;  // work_ is being encoded
  bool stop_ = false;
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace memreplay
