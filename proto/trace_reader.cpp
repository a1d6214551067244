#include "proto/trace_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <google/protobuf/stubs/logging.h>

#include "base/input_file.h"
#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/trace_stand_in.h"

namespace memreplay {
namespace {

// Parses without libprotobuf's own log line (it logs invalid UTF-8 in a string field before
// failing): the caller's error is the one line the user sees.
bool parse_quietly(google::protobuf::MessageLite& message, const std::string& bytes) {
  google::protobuf::LogSilencer quiet;
  return message.ParseFromString(bytes);
}

}  // namespace

void TraceReader::DCtxDeleter::operator()(ZSTD_DCtx_s* ctx) const { ZSTD_freeDCtx(ctx); }

TraceReader::TraceReader(std::string path) : path_(std::move(path)), dctx_(ZSTD_createDCtx()), stack_starts_{0} {
  if (!dctx_) throw std::bad_alloc();
  fd_ = open_input_file(path_);  // a FIFO or device is refused, without blocking
  struct stat st {};
  ::fstat(fd_, &st);
  if (const int stand_in = open_trace_stand_in(st.st_dev, st.st_ino); stand_in >= 0) {
    ::close(fd_);
    fd_ = stand_in;
    ::fstat(fd_, &st);
  }
  size_ = static_cast<uint64_t>(st.st_size);
  try {
    read_header();
    read_footer();
    index_records();
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

TraceReader::~TraceReader() { ::close(fd_); }

void TraceReader::fail(uint64_t offset, const std::string& what) const {
  throw InputError::at_byte(path_, offset, what);
}

void TraceReader::read_exact(uint64_t offset, size_t size, void* out) const {
  auto* dst = static_cast<char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd_, dst, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(offset, std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) fail(offset, "file ends early (did it shrink while being read?)");
    dst += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
}

void TraceReader::read_header() {
  unsigned char magic[format::kFileMagic.size()];
  if (size_ < sizeof magic) fail(0, "too short to be a memreplay trace");
  read_exact(0, sizeof magic, magic);
  if (std::string_view(reinterpret_cast<const char*>(magic), sizeof magic) != format::kFileMagic)
    fail(0, "not a memreplay trace (bad magic)");

  const uint64_t at = sizeof magic;
  unsigned char head[format::kRecordHeaderBytes];
  if (size_ < at + sizeof head) fail(at, "file ends before the header record");
  read_exact(at, sizeof head, head);
  const auto record = format::decode_record_header(head);
  if (!record || record->type != format::RecordType::header) fail(at, "first record is not a header");
  if (size_ < at + sizeof head + record->length) fail(at, "file ends inside the header record");
  std::string payload(record->length, '\0');
  read_exact(at + sizeof head, payload.size(), payload.data());
  if (format::payload_crc(payload) != record->crc) fail(at, "header record fails its CRC check");
  if (!parse_quietly(header_, payload)) fail(at, "header record does not parse (or holds a string that is not UTF-8)");

  const uint32_t ours = format::kFormatMajor;
  if (header_.format_major() > ours)
    fail(at, "format version " + std::to_string(header_.format_major()) + " is newer than this reader's " +
                 std::to_string(ours) + "; upgrade memreplay");
  if (header_.format_major() < 1)
    fail(at, "format version " + std::to_string(header_.format_major()) + " is not a valid version");
  data_start_ = at + sizeof head + record->length;
}

// A trailer at the very end points at the footer. A trailer whose footer does not check out is
// treated like a missing one: the records are read up to wherever they stop.
void TraceReader::read_footer() {
  unsigned char trailer[format::kTrailerBytes];
  if (size_ < data_start_ + format::kRecordHeaderBytes + sizeof trailer) return;
  const uint64_t trailer_at = size_ - sizeof trailer;
  read_exact(trailer_at, sizeof trailer, trailer);
  if (std::string_view(reinterpret_cast<const char*>(trailer) + 8, 8) != format::kTrailerMagic) return;

  const uint64_t at = format::get_u64(trailer);
  if (at < data_start_ || at > trailer_at - format::kRecordHeaderBytes) {
    stop_note_ = "the trailer points outside the file; ";
    return;
  }
  unsigned char head[format::kRecordHeaderBytes];
  read_exact(at, sizeof head, head);
  const auto record = format::decode_record_header(head);
  if (!record || record->type != format::RecordType::footer || record->length != trailer_at - at - sizeof head) {
    stop_note_ = "the trailer does not point at a footer record; ";
    return;
  }
  std::string payload(record->length, '\0');
  read_exact(at + sizeof head, payload.size(), payload.data());
  proto::Footer footer;
  if (format::payload_crc(payload) != record->crc || !parse_quietly(footer, payload)) {
    stop_note_ = "the footer record is damaged; ";
    return;
  }
  footer_ = std::move(footer);
  footer_offset_ = at;
}

// Walks the record headers between the header and the footer (or the end of the file) to find
// every whole chunk. In a finished file any irregularity is damage; in an unfinished one a
// record cut short at the end is where the writer stopped.
void TraceReader::index_records() {
  const uint64_t end = footer_ ? footer_offset_ : size_;
  uint64_t at = data_start_;
  unsigned char head[format::kRecordHeaderBytes];
  while (at < end) {
    if (end - at < sizeof head) {
      if (footer_) fail(at, "stray bytes before the footer");
      stop_note_ += "the file ends inside the record header at byte " + std::to_string(at);
      break;
    }
    read_exact(at, sizeof head, head);
    const uint32_t type = format::get_u32(head);
    const uint32_t length = format::get_u32(head + 4);
    if (type < 1 || type > 3) fail(at, "unknown record type " + std::to_string(type));
    if (length > format::kMaxRecordBytes) fail(at, "record length " + std::to_string(length) + " exceeds the limit");
    if (end - at - sizeof head < length) {
      if (footer_) fail(at, "record runs into the footer");
      stop_note_ += "the file ends inside the record at byte " + std::to_string(at) + " (" + std::to_string(end - at) +
                    " of its " + std::to_string(sizeof head + length) + " bytes are there)";
      break;
    }
    if (type == static_cast<uint32_t>(format::RecordType::header)) fail(at, "second header record");
    if (type == static_cast<uint32_t>(format::RecordType::footer)) {
      if (footer_) fail(at, "footer record before the end of the file");
      stop_note_ += "a footer record at byte " + std::to_string(at) + " has no valid trailer";
      break;
    }
    chunks_.push_back(ChunkRef{.offset = at, .length = length});
    at += sizeof head + length;
  }
  if (footer_) {
    check_footer_index();
  } else if (at == size_ && last_record_is_torn()) {
    stop_note_ +=
        "the last record (at byte " + std::to_string(chunks_.back().offset) + ") fails its CRC check: a torn write";
    chunks_.pop_back();
  } else if (at == size_) {
    stop_note_ += "the file ends after its last whole chunk, without a footer";
  }
}

bool TraceReader::last_record_is_torn() {
  if (chunks_.empty()) return false;
  const ChunkRef& ref = chunks_.back();
  record_.resize(format::kRecordHeaderBytes + ref.length);
  read_exact(ref.offset, record_.size(), record_.data());
  const std::string_view payload(reinterpret_cast<const char*>(record_.data()) + format::kRecordHeaderBytes,
                                 ref.length);
  return format::payload_crc(payload) != format::get_u32(record_.data() + 8);
}

void TraceReader::check_footer_index() {
  const proto::Footer& footer = *footer_;
  if (static_cast<size_t>(footer.chunks_size()) != chunks_.size())
    fail(footer_offset_, "footer lists " + std::to_string(footer.chunks_size()) + " chunks but the file has " +
                             std::to_string(chunks_.size()));
  uint64_t events = 0;
  for (size_t i = 0; i < chunks_.size(); ++i) {
    const proto::ChunkIndexEntry& entry = footer.chunks(static_cast<int>(i));
    if (entry.offset() != chunks_[i].offset || entry.first_event() != events)
      fail(footer_offset_, "footer's index entry " + std::to_string(i) + " does not match the chunks");
    chunks_[i].known = true;
    chunks_[i].first_event = entry.first_event();
    chunks_[i].event_count = entry.event_count();
    chunks_[i].max_time_ns = entry.max_time_ns();
    events += entry.event_count();
  }
  if (events != footer.total_events()) fail(footer_offset_, "footer's total_events disagrees with its chunk index");
  check_event_budget(footer_offset_, events);
}

void TraceReader::check_event_budget(uint64_t offset, uint64_t events) const {
  if (events > event_budget(size_))
    fail(offset, "the trace holds " + std::to_string(events) + " events in " + std::to_string(size_) +
                     " bytes, more than the " + std::to_string(event_budget(size_)) +
                     " a file of that size may hold (" + std::to_string(kMaxEventsPerByte) +
                     " per byte): damaged or hostile");
}

std::optional<std::string> TraceReader::truncation_note() const {
  if (footer_) return std::nullopt;
  return "incomplete trace (no footer): " + stop_note_ + "; read up to its " + std::to_string(chunks_.size()) +
         " whole chunks";
}

std::optional<TraceReader::Loss> TraceReader::loss() {
  if (footer_) return std::nullopt;
  for (size_t i = 0; i < chunks_.size(); ++i)
    if (!chunks_[i].known) decode_chunk(i, side_chunk_, side_events_);
  Loss loss;
  loss.whole_chunks = chunks_.size();
  loss.file_bytes = size_;
  uint64_t end = data_start_;
  if (!chunks_.empty()) {
    const ChunkRef& last = chunks_.back();
    loss.whole_events = last.first_event + last.event_count;
    end = last.offset + format::kRecordHeaderBytes + last.length;
  }
  loss.lost_bytes = size_ - end;
  loss.reason = *truncation_note();
  return loss;
}

bool TraceReader::next_batch(std::vector<Event>& out) {
  while (position_ < chunks_.size()) {
    const size_t index = position_++;
    decode_chunk(index, chunk_, out);
    if (out.empty()) continue;
    batch_first_event_ = chunks_[index].first_event;
    resolve_annotations(index);
    return true;
  }
  out.clear();
  batch_annotations_.clear();
  return false;
}

const KeyValues& TraceReader::annotation(const Event& event) const {
  if (event.kind != EventKind::annotation || event.aux >= batch_annotations_.size())
    throw std::out_of_range("TraceReader::annotation(): not an annotation event of the last batch");
  return batch_annotations_[event.aux];
}

void TraceReader::seek_to_time(uint64_t time_ns) {
  for (position_ = 0; position_ < chunks_.size(); ++position_) {
    // Chunks of an unfinished file are learnt in order, so every earlier one is known already.
    if (!chunks_[position_].known) decode_chunk(position_, side_chunk_, side_events_);
    const ChunkRef& ref = chunks_[position_];
    if (ref.event_count > 0 && ref.max_time_ns >= time_ns) return;
  }
}

std::vector<FrameText> TraceReader::stack_frames(uint32_t stack_id) {
  if (stack_id == 0) return {};
  while (stack_id >= stack_starts_.size() && tables_through_ < chunks_.size()) read_tables_through(tables_through_ + 1);
  if (stack_id >= stack_starts_.size())
    throw std::out_of_range("TraceReader::stack_frames(): " + path_ + " has no stack " + std::to_string(stack_id));
  std::vector<FrameText> frames;
  for (size_t i = stack_starts_[stack_id - 1]; i < stack_starts_[stack_id]; ++i) {
    const FrameIds& f = frames_[stack_frame_ids_[i]];
    frames.push_back(FrameText{strings_[f.filename], f.line, strings_[f.name]});
  }
  return frames;
}

std::vector<Event> TraceReader::read_all(const std::string& path) {
  TraceReader reader(path);
  std::vector<Event> all;
  if (const proto::Footer* footer = reader.footer()) all.reserve(footer->total_events());
  std::vector<Event> batch;
  while (reader.next_batch(batch)) all.insert(all.end(), batch.begin(), batch.end());
  return all;
}

// Every chunk, whatever it is read for, goes through here: its events are checked and decoded,
// what it tells about its place in the file is learnt, and its tables join ours when they are
// next in line.
void TraceReader::decode_chunk(size_t index, proto::Chunk& chunk, std::vector<Event>& out) {
  const ChunkRef& ref = chunks_[index];
  if (const auto error = decoder_.decode(decompress(ref), chunk, out)) fail(ref.offset, *error);
  learn_chunk(index, chunk, out);
  if (tables_through_ == index) absorb_tables(ref, chunk);
}

std::string_view TraceReader::decompress(const ChunkRef& ref) {
  record_.resize(format::kRecordHeaderBytes + ref.length);
  read_exact(ref.offset, record_.size(), record_.data());
  const unsigned char* payload = record_.data() + format::kRecordHeaderBytes;
  const std::string_view payload_view(reinterpret_cast<const char*>(payload), ref.length);
  if (format::payload_crc(payload_view) != format::get_u32(record_.data() + 8))
    fail(ref.offset, "chunk record fails its CRC check");

  const unsigned long long content = ZSTD_getFrameContentSize(payload, ref.length);
  if (content == ZSTD_CONTENTSIZE_UNKNOWN || content == ZSTD_CONTENTSIZE_ERROR)
    fail(ref.offset, "chunk is not a zstd frame with a content size");
  const uint64_t ceiling =
      std::min<uint64_t>(kMaxChunkBytes, kChunkExpansionAllowance + kMaxChunkExpansion * uint64_t{ref.length});
  if (content > ceiling)
    fail(ref.offset, "chunk claims to decompress to " + std::to_string(content) + " bytes from " +
                         std::to_string(ref.length) + " (at most " + std::to_string(ceiling) +
                         " allowed): damaged or hostile");
  if (decompressed_.size() < content) decompressed_.resize(content);
  const size_t got = ZSTD_decompressDCtx(dctx_.get(), decompressed_.data(), content, payload, ref.length);
  if (ZSTD_isError(got)) fail(ref.offset, std::string("chunk does not decompress: ") + ZSTD_getErrorName(got));
  if (got != content) fail(ref.offset, "chunk decompresses to fewer bytes than its frame says");
  return {decompressed_.data(), got};
}

// Checks the chunk against what the footer or the previous chunk says, and records what an
// unfinished file's index lacks. Such chunks are learnt in order: every path that decodes one
// (next_batch, seek_to_time, table reads) walks forward from chunks already known.
void TraceReader::learn_chunk(size_t index, const proto::Chunk& c, const std::vector<Event>& events) {
  ChunkRef& ref = chunks_[index];
  if (ref.known) {
    if (c.first_event() != ref.first_event || events.size() != ref.event_count)
      fail(ref.offset, "chunk disagrees with the footer's index");
    return;
  }
  const uint64_t expected = index == 0 ? 0 : chunks_[index - 1].first_event + chunks_[index - 1].event_count;
  if (c.first_event() != expected)
    fail(ref.offset,
         "chunk starts at event " + std::to_string(c.first_event()) + ", expected " + std::to_string(expected));
  check_event_budget(ref.offset, expected + events.size());
  ref.known = true;
  ref.first_event = expected;
  ref.event_count = events.size();
  for (const Event& e : events) ref.max_time_ns = std::max(ref.max_time_ns, e.time_ns);
}

void TraceReader::absorb_tables(const ChunkRef& ref, const proto::Chunk& c) {
  const auto stacks = static_cast<uint32_t>(stack_starts_.size() - 1);
  if (c.first_string_id() != strings_.size() || c.first_frame_id() != frames_.size() ||
      c.first_stack_id() != stacks + 1)
    fail(ref.offset, "chunk's interning tables do not continue the previous chunk's");
  strings_.insert(strings_.end(), c.strings().begin(), c.strings().end());
  for (const proto::Frame& f : c.frames()) frames_.push_back(FrameIds{f.filename(), f.line(), f.name()});
  for (const proto::Stack& s : c.stacks()) {
    stack_frame_ids_.insert(stack_frame_ids_.end(), s.frames().begin(), s.frames().end());
    stack_starts_.push_back(stack_frame_ids_.size());
  }
  ++tables_through_;
}

void TraceReader::read_tables_through(size_t end_chunk) {
  while (tables_through_ < end_chunk) decode_chunk(tables_through_, side_chunk_, side_events_);
}

void TraceReader::resolve_annotations(size_t index) {
  batch_annotations_.resize(static_cast<size_t>(chunk_.annotations_size()));
  if (batch_annotations_.empty()) return;
  // After a seek the tables may lag behind: annotation strings can come from any earlier chunk.
  if (tables_through_ < index) {
    read_tables_through(index);
    absorb_tables(chunks_[index], chunk_);
  }
  for (size_t i = 0; i < batch_annotations_.size(); ++i) {
    const proto::Annotation& a = chunk_.annotations(static_cast<int>(i));
    KeyValues& kv = batch_annotations_[i];
    kv.clear();
    for (int j = 0; j < a.keys_size(); ++j) kv.emplace_back(strings_[a.keys(j)], strings_[a.values(j)]);
  }
}

}  // namespace memreplay
