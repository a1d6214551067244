#include "recorder/import/trace_writer.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "proto/framing.h"
#include "proto/input_error.h"

namespace memreplay {
namespace {

constexpr std::string_view kProducer = "memreplay 0.1.0";

InputError file_error(const std::string& path, std::string_view action, int error) {
  return InputError(path + ": cannot " + std::string(action) + ": " + std::strerror(error));
}

// Maps (allocator_settings, events_per_kind) in a fixed order: the same trace gives the same bytes.
std::string serialize_deterministic(const google::protobuf::MessageLite& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return out;
}

// Length of the well-formed UTF-8 sequence starting at text[i], or 0 if none does (Unicode 3-7).
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return i + k < text.size() ? static_cast<uint8_t>(text[i + k]) : 0; };
  const auto follows = [&](size_t k, uint8_t low = 0x80, uint8_t high = 0xbf) {
    return byte(k) >= low && byte(k) <= high;
  };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) return follows(1) ? 2 : 0;
  if (lead >= 0xe0 && lead <= 0xef)
    return follows(1, lead == 0xe0 ? 0xa0 : 0x80, lead == 0xed ? 0x9f : 0xbf) && follows(2) ? 3 : 0;
  if (lead >= 0xf0 && lead <= 0xf4)
    return follows(1, lead == 0xf0 ? 0x90 : 0x80, lead == 0xf4 ? 0x8f : 0xbf) && follows(2) && follows(3) ? 4
                                                                                                          : 0;
  return 0;
}

// Protobuf refuses to parse a string field that is not UTF-8, which would make the whole file
// unreadable: each byte that starts no well-formed sequence becomes U+FFFD.
std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (const size_t length = utf8_sequence_length(text, i)) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out.append("\xef\xbf\xbd");
      ++i;
    }
  }
  return out;
}

// Every string field of the header (see valid_utf8).
void make_utf8(proto::TraceHeader& header) {
  for (std::string* text : {header.mutable_source(), header.mutable_source_file(),
                            header.mutable_command_line(), header.mutable_producer()})
    *text = valid_utf8(*text);
  for (proto::DeviceInfo& device : *header.mutable_devices()) device.set_name(valid_utf8(device.name()));
  google::protobuf::Map<std::string, std::string> settings;
  for (const auto& [key, value] : header.allocator_settings()) settings[valid_utf8(key)] = valid_utf8(value);
  *header.mutable_allocator_settings() = std::move(settings);
}

size_t mix(size_t seed, size_t value) {
  return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

}  // namespace

void TraceWriter::CCtxDeleter::operator()(ZSTD_CCtx_s* ctx) const { ZSTD_freeCCtx(ctx); }

size_t TraceWriter::FrameKeyHash::operator()(const FrameKey& k) const {
  return mix(mix(k.filename, k.line), k.name);
}

size_t TraceWriter::StackHash::operator()(const std::vector<uint32_t>& frames) const {
  size_t seed = frames.size();
  for (uint32_t frame : frames) seed = mix(seed, frame);
  return seed;
}

TraceWriter::TraceWriter(std::string path, TraceWriterOptions options)
    : path_(std::move(path)), options_(options), cctx_(ZSTD_createCCtx()) {
  if (options_.events_per_chunk == 0 || options_.events_per_chunk > kMaxEventsPerChunk)
    throw std::invalid_argument("TraceWriter: events_per_chunk must be 1 to " +
                                std::to_string(kMaxEventsPerChunk));
  if (!cctx_) throw std::bad_alloc();
  file_path_ = options_.atomic ? path_ + ".tmp." + std::to_string(::getpid()) : path_;
  fd_ = ::open(file_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw file_error(path_, "create", errno);
  chunk_.set_first_stack_id(1);
}

TraceWriter::~TraceWriter() {
  if (state_ != State::finished) discard_output();
}

void TraceWriter::discard_output() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (options_.atomic) ::unlink(file_path_.c_str());
}

void TraceWriter::require_writing(const char* call) const {
  static constexpr const char* kWhy[] = {" before begin()", "", " after finish()", " after a write error"};
  if (state_ != State::writing)
    throw std::logic_error(std::string("TraceWriter::") + call + kWhy[static_cast<int>(state_)]);
}

void TraceWriter::begin(const proto::TraceHeader& header) {
  if (state_ != State::created) throw std::logic_error("TraceWriter::begin() called twice");
  state_ = State::writing;
  proto::TraceHeader stamped = header;
  stamped.set_format_major(proto::FORMAT_MAJOR);
  stamped.set_format_minor(format::kFormatMinor);
  if (stamped.producer().empty()) stamped.set_producer(std::string(kProducer));
  make_utf8(stamped);
  std::string bytes(format::kFileMagic);
  bytes += format::encode_record(format::RecordType::header, serialize_deterministic(stamped));
  write_bytes(bytes);
}

uint32_t TraceWriter::intern_string(std::string_view text) {
  if (auto it = string_ids_.find(text); it != string_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(string_ids_.size());
  string_ids_.emplace(std::string(text), id);
  chunk_.add_strings(valid_utf8(text));
  return id;
}

uint32_t TraceWriter::intern_frame(const FrameText& frame) {
  const FrameKey key{intern_string(frame.filename), frame.line, intern_string(frame.name)};
  auto [it, inserted] = frame_ids_.try_emplace(key, static_cast<uint32_t>(frame_ids_.size()));
  if (inserted) {
    proto::Frame* f = chunk_.add_frames();
    f->set_filename(key.filename);
    f->set_line(key.line);
    f->set_name(key.name);
  }
  return it->second;
}

uint32_t TraceWriter::intern_stack(std::span<const FrameText> frames) {
  require_writing("intern_stack()");
  stack_scratch_.clear();
  for (const FrameText& frame : frames) stack_scratch_.push_back(intern_frame(frame));
  if (auto it = stack_ids_.find(stack_scratch_); it != stack_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(stack_ids_.size() + 1);  // 0 means "no stack"
  stack_ids_.emplace(stack_scratch_, id);
  chunk_.add_stacks()->mutable_frames()->Add(stack_scratch_.begin(), stack_scratch_.end());
  return id;
}

void TraceWriter::append(const Event& event) {
  if (event.kind == EventKind::annotation) {
    append_annotation(event, {});
    return;
  }
  require_writing("append()");
  add_event(event, event.aux);
}

void TraceWriter::append_annotation(const Event& event, const KeyValues& metadata) {
  require_writing("append_annotation()");
  if (event.kind != EventKind::annotation)
    throw std::logic_error("TraceWriter::append_annotation() with a " +
                           std::string(event_kind_name(event.kind)) + " event");
  proto::Annotation* annotation = chunk_.add_annotations();
  for (const auto& [key, value] : metadata) {
    annotation->add_keys(intern_string(key));
    annotation->add_values(intern_string(value));
  }
  add_event(event, static_cast<uint64_t>(chunk_.annotations_size() - 1));
}

void TraceWriter::add_event(const Event& e, uint64_t aux) {
  const auto kind = static_cast<uint32_t>(e.kind);
  if (!is_valid_event_kind(kind))
    throw std::logic_error("TraceWriter::append(): invalid event kind " + std::to_string(kind));
  if (e.stack > stack_ids_.size())
    throw std::logic_error("TraceWriter::append(): stack id " + std::to_string(e.stack) +
                           " was not interned");
  if (chunk_.kind_size() == 0) {
    chunk_.set_base_time_ns(e.time_ns);
    previous_time_ = chunk_min_time_ = chunk_max_time_ = e.time_ns;
    previous_address_ = 0;
  }
  chunk_.add_kind(kind);
  // Unsigned differences wrap, and the reader's unsigned sums wrap back: any order round-trips.
  chunk_.add_time_delta(static_cast<int64_t>(e.time_ns - previous_time_));
  chunk_.add_device(e.device);
  chunk_.add_stream(e.stream);
  chunk_.add_address_delta(static_cast<int64_t>(e.address - previous_address_));
  chunk_.add_size(e.size);
  chunk_.add_stack(e.stack);
  chunk_.add_flags(e.flags);
  chunk_.add_aux(aux);
  previous_time_ = e.time_ns;
  previous_address_ = e.address;
  chunk_min_time_ = std::min(chunk_min_time_, e.time_ns);
  chunk_max_time_ = std::max(chunk_max_time_, e.time_ns);
  chunk_has_flags_ |= e.flags != 0;
  chunk_has_aux_ |= aux != 0;
  ++events_per_kind_[kind];
  if (static_cast<uint32_t>(chunk_.kind_size()) >= options_.events_per_chunk) write_chunk();
}

bool TraceWriter::chunk_pending() const {
  return chunk_.kind_size() > 0 || chunk_.strings_size() > 0 || chunk_.frames_size() > 0 ||
         chunk_.stacks_size() > 0;
}

void TraceWriter::flush() {
  require_writing("flush()");
  if (chunk_pending()) write_chunk();
}

void TraceWriter::write_chunk() {
  const auto count = static_cast<uint64_t>(chunk_.kind_size());
  chunk_.set_first_event(next_event_);
  // All-zero flags and aux columns are left out (the format allows it): most events have neither.
  if (!chunk_has_flags_) chunk_.clear_flags();
  if (!chunk_has_aux_) chunk_.clear_aux();
  chunk_.SerializeToString(&serialized_);
  compressed_.resize(ZSTD_compressBound(serialized_.size()));
  const size_t size = ZSTD_compressCCtx(cctx_.get(), compressed_.data(), compressed_.size(),
                                        serialized_.data(), serialized_.size(), options_.zstd_level);
  if (ZSTD_isError(size))
    throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(size));
  compressed_.resize(size);

  proto::ChunkIndexEntry* entry = footer_.add_chunks();
  entry->set_offset(offset_);
  entry->set_first_event(next_event_);
  entry->set_event_count(count);
  if (count > 0) {  // a chunk of only interning tables has no time range
    entry->set_min_time_ns(chunk_min_time_);
    entry->set_max_time_ns(chunk_max_time_);
    if (next_event_ == 0 || chunk_min_time_ < footer_.min_time_ns()) footer_.set_min_time_ns(chunk_min_time_);
    footer_.set_max_time_ns(std::max(footer_.max_time_ns(), chunk_max_time_));
  }
  write_bytes(format::encode_record(format::RecordType::chunk, compressed_));

  next_event_ += count;
  chunk_.Clear();
  chunk_.set_first_string_id(static_cast<uint32_t>(string_ids_.size()));
  chunk_.set_first_frame_id(static_cast<uint32_t>(frame_ids_.size()));
  chunk_.set_first_stack_id(static_cast<uint32_t>(stack_ids_.size() + 1));
  chunk_has_flags_ = chunk_has_aux_ = false;
}

void TraceWriter::finish() {
  if (state_ == State::finished) return;
  require_writing("finish()");
  if (chunk_pending()) write_chunk();

  footer_.set_total_events(next_event_);
  for (uint32_t kind = 1; kind < kEventKindCount; ++kind)
    if (events_per_kind_[kind] > 0) (*footer_.mutable_events_per_kind())[kind] = events_per_kind_[kind];
  footer_.set_string_count(static_cast<uint32_t>(string_ids_.size()));
  footer_.set_frame_count(static_cast<uint32_t>(frame_ids_.size()));
  footer_.set_stack_count(static_cast<uint32_t>(stack_ids_.size()));
  const uint64_t footer_offset = offset_;
  // Footer and trailer in one write: a crash between them would leave a footer without a trailer.
  write_bytes(format::encode_record(format::RecordType::footer, serialize_deterministic(footer_)) +
              format::encode_trailer(footer_offset));

  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    state_ = State::failed;
    throw file_error(path_, "write", errno);
  }
  if (options_.atomic && std::rename(file_path_.c_str(), path_.c_str()) != 0)
    throw file_error(path_, "rename " + file_path_ + " onto it", errno);
  state_ = State::finished;
}

void TraceWriter::write_bytes(std::string_view bytes) {
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
