#include "recorder/live/live_trace_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/wire_format.h"

namespace memreplay {
namespace {

constexpr std::string_view kProducer = "memreplay 0.1.0";
constexpr uint32_t kFormatMajor = 1;  // trace.proto's FORMAT_MAJOR

InputError file_error(const std::string& path, std::string_view action, int error) {
  return InputError(path + ": cannot " + std::string(action) + ": " + std::strerror(error));
}

// Field numbers of trace.proto, message by message.
namespace header_field {
enum : uint32_t { format_major = 1, format_minor = 2, source = 3, capture_time_ns = 5, command_line = 6, pid = 7,
                  devices = 8, allocator_settings = 9, producer = 10, starts_mid_run = 11 };
}
namespace chunk_field {
enum : uint32_t { first_event = 1, base_time_ns = 2, kind = 3, time_delta = 4, device = 5, stream = 6,
                  address_delta = 7, size = 8, stack = 9, flags = 10, aux = 11, first_string_id = 12, strings = 13,
                  first_frame_id = 14, frames = 15, first_stack_id = 16, stacks = 17, annotations = 18 };
}
namespace footer_field {
enum : uint32_t { chunks = 1, total_events = 2, events_per_kind = 3, min_time_ns = 4, max_time_ns = 5,
                  string_count = 6, frame_count = 7, stack_count = 8 };
}

std::string encode_header(const LiveTraceHeader& h) {
  using namespace header_field;
  std::string out;
  wire::scalar(out, format_major, kFormatMajor);
  wire::scalar(out, format_minor, format::kFormatMinor);
  wire::text(out, source, wire::valid_utf8(h.source));
  wire::scalar(out, capture_time_ns, h.capture_time_ns);
  wire::text(out, command_line, wire::valid_utf8(h.command_line));
  wire::scalar(out, pid, h.pid);
  for (const LiveTraceHeader::Device& d : h.devices) {
    std::string device;
    wire::scalar(device, 1, d.index);
    wire::text(device, 2, wire::valid_utf8(d.name));
    wire::scalar(device, 3, d.total_memory);
    wire::bytes(out, devices, device);
  }
  for (const auto& [key, value] : h.allocator_settings) {  // std::map: sorted, deterministic
    std::string entry;
    wire::bytes(entry, 1, wire::valid_utf8(key));
    wire::bytes(entry, 2, wire::valid_utf8(value));
    wire::bytes(out, allocator_settings, entry);
  }
  wire::text(out, producer, kProducer);
  wire::scalar(out, starts_mid_run, h.starts_mid_run ? 1 : 0);
  return out;
}

}  // namespace

void LiveTraceWriter::CCtxDeleter::operator()(ZSTD_CCtx_s* ctx) const { ZSTD_freeCCtx(ctx); }

LiveTraceWriter::LiveTraceWriter(std::string path, const LiveTraceHeader& header, uint32_t events_per_chunk,
                                 int zstd_level)
    : path_(std::move(path)),
      events_per_chunk_(std::clamp<uint32_t>(events_per_chunk, 1, 1u << 21)),
      zstd_level_(zstd_level),
      cctx_(ZSTD_createCCtx()) {
  if (!cctx_) throw std::bad_alloc();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw file_error(path_, "create", errno);
  std::string bytes(format::kFileMagic);
  bytes += format::encode_record(format::RecordType::header, encode_header(header));
  write_bytes(bytes);
}

LiveTraceWriter::~LiveTraceWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void LiveTraceWriter::require_open(const char* call) const {
  if (failed_ || fd_ < 0)
    throw std::logic_error(std::string("LiveTraceWriter::") + call + (failed_ ? " after a write error" : " after finish()"));
}

uint32_t LiveTraceWriter::intern_string(std::string_view text) {
  std::string key(text);
  if (auto it = string_ids_.find(key); it != string_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(string_ids_.size());
  new_strings_.push_back(wire::valid_utf8(text));
  string_ids_.emplace(std::move(key), id);
  return id;
}

uint32_t LiveTraceWriter::intern_stack(std::span<const FrameText> frames) {
  require_open("intern_stack()");
  std::vector<uint32_t> ids;
  ids.reserve(frames.size());
  for (const FrameText& f : frames) {
    const std::array<uint32_t, 3> key{intern_string(f.filename), f.line, intern_string(f.name)};
    auto [it, inserted] = frame_ids_.try_emplace(key, static_cast<uint32_t>(frame_ids_.size()));
    if (inserted) new_frames_.push_back(key);
    ids.push_back(it->second);
  }
  auto [it, inserted] = stack_ids_.try_emplace(ids, static_cast<uint32_t>(stack_ids_.size() + 1));  // 0 = none
  if (inserted) new_stacks_.push_back(std::move(ids));
  return it->second;
}

void LiveTraceWriter::append(const Event& event) {
  require_open("append()");
  if (event.kind == EventKind::annotation) {
    append_annotation(event, {});
    return;
  }
  add_event(event, event.aux);
}

void LiveTraceWriter::append_annotation(const Event& event, const KeyValues& metadata) {
  require_open("append_annotation()");
  std::vector<uint32_t> keys, values;
  for (const auto& [k, v] : metadata) {
    keys.push_back(intern_string(k));
    values.push_back(intern_string(v));
  }
  annotations_.emplace_back(std::move(keys), std::move(values));
  Event e = event;
  e.kind = EventKind::annotation;
  add_event(e, annotations_.size() - 1);
}

void LiveTraceWriter::add_event(const Event& e, uint64_t aux) {
  const auto kind = static_cast<uint32_t>(e.kind);
  if (!is_valid_event_kind(kind)) throw std::logic_error("LiveTraceWriter: invalid event kind " + std::to_string(kind));
  if (e.stack > stack_ids_.size()) throw std::logic_error("LiveTraceWriter: stack id was not interned");
  if (kinds_.empty()) {
    base_time_ = previous_time_ = chunk_min_time_ = chunk_max_time_ = e.time_ns;
    previous_address_ = 0;
  }
  kinds_.push_back(kind);
  // Unsigned differences wrap and the reader's sums wrap back: any order round-trips.
  time_deltas_.push_back(static_cast<int64_t>(e.time_ns - previous_time_));
  devices_.push_back(e.device);
  streams_.push_back(e.stream);
  address_deltas_.push_back(static_cast<int64_t>(e.address - previous_address_));
  sizes_.push_back(e.size);
  stacks_.push_back(e.stack);
  flags_.push_back(e.flags);
  auxes_.push_back(aux);
  previous_time_ = e.time_ns;
  previous_address_ = e.address;
  chunk_min_time_ = std::min(chunk_min_time_, e.time_ns);
  chunk_max_time_ = std::max(chunk_max_time_, e.time_ns);
  chunk_has_flags_ |= e.flags != 0;
  chunk_has_aux_ |= aux != 0;
  ++events_per_kind_[kind];
  if (kinds_.size() >= events_per_chunk_) write_chunk();
}

bool LiveTraceWriter::chunk_pending() const {
  return !kinds_.empty() || !new_strings_.empty() || !new_frames_.empty() || !new_stacks_.empty();
}

void LiveTraceWriter::flush() {
  require_open("flush()");
  if (chunk_pending()) write_chunk();
}

void LiveTraceWriter::write_chunk() {
  using namespace chunk_field;
  const uint64_t count = kinds_.size();
  encoded_.clear();
  wire::scalar(encoded_, first_event, next_event_);
  wire::scalar(encoded_, base_time_ns, count ? base_time_ : 0);
  wire::packed(encoded_, kind, kinds_);
  wire::packed(encoded_, time_delta, time_deltas_, /*zigzag=*/true);
  wire::packed(encoded_, device, devices_);
  wire::packed(encoded_, stream, streams_);
  wire::packed(encoded_, address_delta, address_deltas_, /*zigzag=*/true);
  wire::packed(encoded_, size, sizes_);
  wire::packed(encoded_, stack, stacks_);
  // All-zero flags and aux columns are left out (the format allows it): most events have neither.
  if (chunk_has_flags_) wire::packed(encoded_, flags, flags_);
  if (chunk_has_aux_) wire::packed(encoded_, aux, auxes_);
  wire::scalar(encoded_, first_string_id, chunk_first_string_);
  for (const std::string& s : new_strings_) wire::bytes(encoded_, strings, s);
  wire::scalar(encoded_, first_frame_id, chunk_first_frame_);
  for (const auto& f : new_frames_) {
    std::string frame;
    wire::scalar(frame, 1, f[0]);
    wire::scalar(frame, 2, f[1]);
    wire::scalar(frame, 3, f[2]);
    wire::bytes(encoded_, frames, frame);
  }
  wire::scalar(encoded_, first_stack_id, chunk_first_stack_);
  for (const auto& s : new_stacks_) {
    std::string stack;
    wire::packed(stack, 1, s);
    wire::bytes(encoded_, stacks, stack);
  }
  for (const auto& [keys, values] : annotations_) {
    std::string annotation;
    wire::packed(annotation, 1, keys);
    wire::packed(annotation, 2, values);
    wire::bytes(encoded_, annotations, annotation);
  }

  compressed_.resize(ZSTD_compressBound(encoded_.size()));
  const size_t n = ZSTD_compressCCtx(cctx_.get(), compressed_.data(), compressed_.size(), encoded_.data(),
                                     encoded_.size(), zstd_level_);
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  compressed_.resize(n);

  const uint64_t offset = offset_;
  write_bytes(format::encode_record(format::RecordType::chunk, compressed_));
  index_.push_back({offset, next_event_, count, count ? chunk_min_time_ : 0, count ? chunk_max_time_ : 0});
  if (count > 0) {
    if (next_event_ == 0 || chunk_min_time_ < min_time_) min_time_ = chunk_min_time_;
    max_time_ = std::max(max_time_, chunk_max_time_);
  }

  next_event_ += count;
  for (auto* column : {&kinds_, &devices_, &stacks_, &flags_}) column->clear();
  for (auto* column : {&time_deltas_, &address_deltas_}) column->clear();
  for (auto* column : {&streams_, &sizes_, &auxes_}) column->clear();
  new_strings_.clear();
  new_frames_.clear();
  new_stacks_.clear();
  annotations_.clear();
  chunk_first_string_ = static_cast<uint32_t>(string_ids_.size());
  chunk_first_frame_ = static_cast<uint32_t>(frame_ids_.size());
  chunk_first_stack_ = static_cast<uint32_t>(stack_ids_.size() + 1);
  chunk_has_flags_ = chunk_has_aux_ = false;
}

void LiveTraceWriter::finish() {
  if (fd_ < 0 && !failed_) return;
  require_open("finish()");
  if (chunk_pending()) write_chunk();
  using namespace footer_field;
  std::string footer;
  for (const IndexEntry& e : index_) {
    std::string entry;
    wire::scalar(entry, 1, e.offset);
    wire::scalar(entry, 2, e.first_event);
    wire::scalar(entry, 3, e.event_count);
    wire::scalar(entry, 4, e.min_time_ns);
    wire::scalar(entry, 5, e.max_time_ns);
    wire::bytes(footer, chunks, entry);
  }
  wire::scalar(footer, total_events, next_event_);
  for (uint32_t kind = 1; kind < kEventKindCount; ++kind) {
    if (events_per_kind_[kind] == 0) continue;
    std::string entry;
    wire::scalar(entry, 1, kind);
    wire::scalar(entry, 2, events_per_kind_[kind]);
    wire::bytes(footer, events_per_kind, entry);
  }
  wire::scalar(footer, min_time_ns, min_time_);
  wire::scalar(footer, max_time_ns, max_time_);
  wire::scalar(footer, string_count, string_ids_.size());
  wire::scalar(footer, frame_count, frame_ids_.size());
  wire::scalar(footer, stack_count, stack_ids_.size());
  const uint64_t footer_offset = offset_;
  // Footer and trailer in one write: a crash between them would leave a footer without a trailer.
  write_bytes(format::encode_record(format::RecordType::footer, footer) + format::encode_trailer(footer_offset));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    failed_ = true;
    throw file_error(path_, "write", errno);
  }
}

void LiveTraceWriter::write_bytes(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      failed_ = true;
      throw file_error(path_, "write", errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    offset_ += static_cast<uint64_t>(n);
  }
}

// --- wire_format.h ---

namespace wire {

std::string valid_utf8(std::string_view text) {
  // Length of the well-formed sequence at text[i] (Unicode 3.7), or 0.
  auto sequence = [&](size_t i) -> size_t {
    auto byte = [&](size_t k) { return i + k < text.size() ? static_cast<uint8_t>(text[i + k]) : 0; };
    auto follows = [&](size_t k, uint8_t low = 0x80, uint8_t high = 0xbf) { return byte(k) >= low && byte(k) <= high; };
    const uint8_t lead = byte(0);
    if (lead < 0x80) return 1;
    if (lead >= 0xc2 && lead <= 0xdf) return follows(1) ? 2 : 0;
    if (lead >= 0xe0 && lead <= 0xef)
      return follows(1, lead == 0xe0 ? 0xa0 : 0x80, lead == 0xed ? 0x9f : 0xbf) && follows(2) ? 3 : 0;
    if (lead >= 0xf0 && lead <= 0xf4)
      return follows(1, lead == 0xf0 ? 0x90 : 0x80, lead == 0xf4 ? 0x8f : 0xbf) && follows(2) && follows(3) ? 4 : 0;
    return 0;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (const size_t n = sequence(i)) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      out.append("\xef\xbf\xbd");
      ++i;
    }
  }
  return out;
}

}  // namespace wire
}  // namespace memreplay
