#include "proto/trace_encoder.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <zstd.h>

#include "proto/chunk_compressor.h"
#include "proto/field_numbers.h"
#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/version.h"
#include "proto/wire_format.h"

namespace memreplay {
namespace {

using namespace format;

InputError file_error(const std::string& path, std::string_view action, int error) {
  return InputError(path + ": cannot " + std::string(action) + ": " + std::strerror(error));
}

std::string encode_header(const TraceHeaderFields& h) {
  using namespace header_field;
  std::string out;
  wire::scalar(out, format_major, kFormatMajor);
  wire::scalar(out, format_minor, kFormatMinor);
  wire::text(out, source, wire::valid_utf8(h.source));
  wire::text(out, source_file, wire::valid_utf8(h.source_file));
  wire::scalar(out, capture_time_ns, h.capture_time_ns);
  wire::text(out, command_line, wire::valid_utf8(h.command_line));
  wire::scalar(out, pid, h.pid);
  for (const TraceHeaderFields::Device& d : h.devices) {
    std::string device;
    wire::scalar(device, device_field::index, d.index);
    wire::text(device, device_field::name, wire::valid_utf8(d.name));
    // Its numbers (bytes and counts), in field order.
    for (const auto& [field, value] : {std::pair{device_field::total_memory, d.total_memory},
                                       {device_field::cap_bytes, d.cap_bytes},
                                       {device_field::segments_of_unknown_pool, d.segments_of_unknown_pool},
                                       {device_field::allocations_of_unknown_pool, d.allocations_of_unknown_pool}})
      wire::scalar(device, field, value);
    wire::bytes(out, devices, device);
  }
  // Sorted by key, as protobuf's deterministic serialization sorts a map. Of keys that are equal
  // once repaired, the last in order keeps its value.
  std::map<std::string, std::string> settings;
  for (const auto& [key, value] : h.allocator_settings)
    settings.insert_or_assign(wire::valid_utf8(key), wire::valid_utf8(value));
  for (const auto& [key, value] : settings) {
    std::string entry;
    wire::bytes(entry, map_entry_field::key, key);
    wire::bytes(entry, map_entry_field::value, value);
    wire::bytes(out, allocator_settings, entry);
  }
  wire::text(out, producer, h.producer.empty() ? std::string(kProducer) : wire::valid_utf8(h.producer));
  wire::scalar(out, starts_mid_run, h.starts_mid_run ? 1 : 0);
  for (const TraceHeaderFields::Pool& p : h.pools) {
    std::string pool;
    wire::scalar(pool, pool_field::id, p.id);
    wire::text(pool, pool_field::kind, wire::valid_utf8(p.kind));
    wire::scalar(pool, pool_field::torch_id_first, p.torch_id_first);
    wire::scalar(pool, pool_field::torch_id_second, p.torch_id_second);
    wire::text(pool, pool_field::name, wire::valid_utf8(p.name));
    wire::bytes(out, pools, pool);
  }
  wire::scalar(out, captures_flagged, h.captures_flagged ? 1 : 0);
  return out;
}

}  // namespace

// A chunk's compression; `raw` holds a copy of the chunk while it is compressed on a thread.
struct TraceEncoder::Compressor {
  ChunkCompressor zstd;
  std::string raw;
};

void TraceEncoder::CompressorDeleter::operator()(Compressor* compressor) const { delete compressor; }

TraceEncoder::TraceEncoder(std::string_view writer, std::string path, const std::string& file_path,
                           TraceEncoderOptions options)
    : writer_(writer), path_(std::move(path)), options_(options) {
  check_options_and_make_compressors();
  fd_ = ::open(file_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw file_error(path_, "create", errno);
}

TraceEncoder::TraceEncoder(std::string_view writer, std::string path, int fd, TraceEncoderOptions options)
    : writer_(writer), path_(std::move(path)), options_(options) {
  check_options_and_make_compressors();
  fd_ = fd;
  owns_fd_ = false;
}

void TraceEncoder::check_options_and_make_compressors() {
  if (options_.events_per_chunk == 0 || options_.events_per_chunk > kMaxEventsPerChunk)
    throw std::invalid_argument(writer_ + ": events_per_chunk must be 1 to " + std::to_string(kMaxEventsPerChunk) +
                                ", not " + std::to_string(options_.events_per_chunk));
  if (options_.zstd_level < ZSTD_minCLevel() || options_.zstd_level > ZSTD_maxCLevel())
    throw std::invalid_argument(writer_ + ": zstd_level must be " + std::to_string(ZSTD_minCLevel()) + " to " +
                                std::to_string(ZSTD_maxCLevel()) + ", not " + std::to_string(options_.zstd_level));
  if (options_.compression_threads > kMaxCompressionThreads)
    throw std::invalid_argument(writer_ + ": compression_threads must be 0 to " +
                                std::to_string(kMaxCompressionThreads) + ", not " +
                                std::to_string(options_.compression_threads));
  for (uint32_t i = 0; i < std::max<uint32_t>(options_.compression_threads, 1); ++i)
    compressors_.emplace_back(new Compressor);
}

TraceEncoder::~TraceEncoder() { abandon(); }

void TraceEncoder::abandon() noexcept {
  pending_.clear();  // waits for the compressions under way; their chunks are not written
  if (fd_ >= 0 && owns_fd_) ::close(fd_);
  fd_ = -1;
  if (state_ != State::finished) state_ = State::failed;
}

void TraceEncoder::require_writing(const char* call) const {
  static constexpr const char* kWhy[] = {" before begin()", "", " after finish()", " after a write error"};
  if (state_ != State::writing) throw std::logic_error(writer_ + "::" + call + kWhy[static_cast<int>(state_)]);
}

void TraceEncoder::misuse(const char* call, const std::exception& e) const {
  throw std::logic_error(writer_ + "::" + call + ": " + e.what());
}

void TraceEncoder::begin(const TraceHeaderFields& header) {
  if (state_ != State::created) throw std::logic_error(writer_ + "::begin() called twice");
  state_ = State::writing;
  std::string bytes(kFileMagic);
  bytes += encode_record(RecordType::header, encode_header(header));
  write_bytes(bytes);
}

uint32_t TraceEncoder::intern_stack(std::span<const FrameText> frames) {
  require_writing("intern_stack()");
  return chunks_.intern_stack(frames);
}

void TraceEncoder::append(const Event& event) {
  require_writing("append()");
  try {
    chunks_.add(event);
  } catch (const std::logic_error& e) {
    misuse("append()", e);
  }
  if (chunks_.chunk_events() >= options_.events_per_chunk) write_chunk();
}

void TraceEncoder::append_annotation(const Event& event, const KeyValues& metadata) {
  require_writing("append_annotation()");
  try {
    chunks_.add_annotation(event, metadata);
  } catch (const std::logic_error& e) {
    misuse("append_annotation()", e);
  }
  if (chunks_.chunk_events() >= options_.events_per_chunk) write_chunk();
}

void TraceEncoder::flush() {
  require_writing("flush()");
  if (chunks_.pending()) write_chunk();
  write_all_pending();
}

void TraceEncoder::append_encoded(ChunkEncoder&& encoder, const std::vector<ChunkRows>& rows) {
  require_writing("append_encoded()");
  if (chunks_.events_added() > 0 || chunks_.pending() || chunks_.stack_count() > 0)
    throw std::logic_error(writer_ + "::append_encoded() after events or stacks");
  uint64_t next_event = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ChunkSummary& s = rows[i].summary;
    const bool last = i + 1 == rows.size();
    if (s.first_event != next_event || s.event_count == 0 || s.event_count > options_.events_per_chunk ||
        (!last && s.event_count != options_.events_per_chunk))
      throw std::logic_error(writer_ + "::append_encoded(): rows not cut every " +
                             std::to_string(options_.events_per_chunk) + " events");
    next_event += s.event_count;
  }
  if (encoder.chunk_events() > 0 || encoder.events_added() != next_event)
    throw std::logic_error(writer_ + "::append_encoded(): the encoder holds events the rows do not");
  for (const ChunkRows& r : rows)
    if (!r.columns_kept && !encoder.compressed_matches(r, options_.zstd_level))
      throw std::logic_error(writer_ + "::append_encoded(): rows without columns, compressed for other tables");
  chunks_ = std::move(encoder);
  for (const ChunkRows& r : rows) {
    if (chunks_.compressed_is_next(r, options_.zstd_level)) {  // compressed ahead: after the chunks before it
      write_all_pending();
      write_chunk_record(r.compressed->bytes, r.summary);
      continue;
    }
    if (!r.columns_kept) throw std::logic_error(writer_ + "::append_encoded(): rows without columns after new tables");
    ChunkSummary summary;
    const std::string_view chunk = chunks_.encode(r, summary);
    write_encoded_chunk(chunk, summary);
  }
}

void TraceEncoder::write_chunk() {
  ChunkSummary summary;
  const std::string_view chunk = chunks_.encode(summary);
  write_encoded_chunk(chunk, summary);
}

void TraceEncoder::write_encoded_chunk(std::string_view chunk, const ChunkSummary& summary) {
  Compressor& compressor = *compressors_[chunks_started_++ % compressors_.size()];
  if (options_.compression_threads == 0) {
    compressor.zstd.compress(chunk, options_.zstd_level, path_);
    write_chunk_record(compressor.zstd.compressed(), summary);
    return;
  }
  // The compressor's last chunk (compressors_.size() chunks ago) must be written before it is reused.
  while (pending_.size() >= compressors_.size()) write_oldest_pending();
  compressor.raw = chunk;
  pending_.push_back(
      {std::async(std::launch::async, [&compressor, level = options_.zstd_level,
                                       this] { compressor.zstd.compress(compressor.raw, level, path_); }),
       &compressor, summary});
}

void TraceEncoder::write_oldest_pending() {
  PendingChunk chunk = std::move(pending_.front());
  pending_.pop_front();
  try {
    chunk.done.get();
  } catch (...) {  // a compression failure: the file would lack this chunk
    state_ = State::failed;
    throw;
  }
  write_chunk_record(chunk.compressor->zstd.compressed(), chunk.summary);
}

void TraceEncoder::write_all_pending() {
  while (!pending_.empty()) write_oldest_pending();
}

void TraceEncoder::write_chunk_record(std::string_view compressed, const ChunkSummary& summary) {
  index_.push_back({offset_, summary});
  if (summary.event_count > 0) {  // a chunk of only interning tables has no time range
    if (summary.first_event == 0 || summary.min_time_ns < min_time_) min_time_ = summary.min_time_ns;
    max_time_ = std::max(max_time_, summary.max_time_ns);
  }
  write_bytes(encode_record(RecordType::chunk, compressed));
}

std::string TraceEncoder::encode_footer() const {
  using namespace footer_field;
  std::string footer, entry;
  for (const IndexEntry& e : index_) {
    entry.clear();
    wire::scalar(entry, index_entry_field::offset, e.offset);
    wire::scalar(entry, index_entry_field::first_event, e.summary.first_event);
    wire::scalar(entry, index_entry_field::event_count, e.summary.event_count);
    wire::scalar(entry, index_entry_field::min_time_ns, e.summary.min_time_ns);
    wire::scalar(entry, index_entry_field::max_time_ns, e.summary.max_time_ns);
    wire::bytes(footer, chunks, entry);
  }
  wire::scalar(footer, total_events, chunks_.events_added());
  const auto& per_kind = chunks_.events_per_kind();
  for (uint32_t kind = 1; kind < kEventKindCount; ++kind) {
    if (per_kind[kind] == 0) continue;
    entry.clear();
    wire::number(entry, map_entry_field::key, kind);
    wire::number(entry, map_entry_field::value, per_kind[kind]);
    wire::bytes(footer, events_per_kind, entry);
  }
  wire::scalar(footer, min_time_ns, min_time_);
  wire::scalar(footer, max_time_ns, max_time_);
  wire::scalar(footer, string_count, chunks_.string_count());
  wire::scalar(footer, frame_count, chunks_.frame_count());
  wire::scalar(footer, stack_count, chunks_.stack_count());
  return footer;
}

void TraceEncoder::finish() {
  if (state_ == State::finished) return;
  require_writing("finish()");
  if (chunks_.pending()) write_chunk();
  write_all_pending();
  const uint64_t footer_offset = offset_;
  // Footer and trailer in one write: a crash between them would leave a footer without a trailer.
  write_bytes(encode_record(RecordType::footer, encode_footer()) + encode_trailer(footer_offset));
  const int fd = fd_;
  fd_ = -1;
  if (owns_fd_ && ::close(fd) != 0) {
    state_ = State::failed;
    throw file_error(path_, "write", errno);
  }
  state_ = State::finished;
}

void TraceEncoder::write_bytes(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      state_ = State::failed;
      throw file_error(path_, "write", errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    offset_ += static_cast<uint64_t>(n);
  }
}

}  // namespace memreplay
