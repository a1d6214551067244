#include "proto/chunk_encoder.h"

#include <algorithm>
#include <stdexcept>

#include "proto/field_numbers.h"
#include "proto/wire_format.h"

namespace memreplay::format {
namespace {

size_t mix(size_t seed, size_t value) { return seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2)); }

// A packed repeated field of uint32 ids (Stack.frames, Annotation.keys/values); left out when empty.
void packed_ids(std::string& out, uint32_t field, std::span<const uint32_t> ids, std::string& scratch) {
  if (ids.empty()) return;
  scratch.clear();
  for (const uint32_t id : ids) wire::varint(scratch, id);
  wire::bytes(out, field, scratch);
}

}  // namespace

void ChunkEncoder::Column::grow() { bytes_.resize(std::max<size_t>(bytes_.size() * 2, 4096)); }

size_t ChunkEncoder::FrameKeyHash::operator()(const FrameKey& k) const { return mix(mix(k.filename, k.line), k.name); }

size_t ChunkEncoder::StackHash::operator()(const std::vector<uint32_t>& frames) const {
  size_t seed = frames.size();
  for (uint32_t frame : frames) seed = mix(seed, frame);
  return seed;
}

ChunkEncoder::ChunkEncoder() = default;

uint32_t ChunkEncoder::intern_string(std::string_view text) {
  if (auto it = string_ids_.find(text); it != string_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(string_ids_.size());
  string_ids_.emplace(std::string(text), id);
  wire::bytes(new_strings_, chunk_field::strings, wire::valid_utf8(text));
  ++new_string_count_;
  return id;
}

uint32_t ChunkEncoder::intern_frame(const FrameText& frame) {
  const FrameKey key{intern_string(frame.filename), frame.line, intern_string(frame.name)};
  auto [it, inserted] = frame_ids_.try_emplace(key, static_cast<uint32_t>(frame_ids_.size()));
  if (inserted) {
    scratch_.clear();
    wire::scalar(scratch_, frame_field::filename, key.filename);
    wire::scalar(scratch_, frame_field::line, key.line);
    wire::scalar(scratch_, frame_field::name, key.name);
    wire::bytes(new_frames_, chunk_field::frames, scratch_);
    ++new_frame_count_;
  }
  return it->second;
}

uint32_t ChunkEncoder::intern_stack(std::span<const FrameText> frames) {
  stack_scratch_.clear();
  for (const FrameText& frame : frames) stack_scratch_.push_back(intern_frame(frame));
  if (auto it = stack_ids_.find(stack_scratch_); it != stack_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(stack_ids_.size() + 1);  // 0 means "no stack"
  stack_ids_.emplace(stack_scratch_, id);
  std::string stack, ids;
  packed_ids(stack, stack_field::frames, stack_scratch_, ids);
  wire::bytes(new_stacks_, chunk_field::stacks, stack);
  ++new_stack_count_;
  return id;
}

void ChunkEncoder::check(const Event& e) const {
  const auto kind = static_cast<uint32_t>(e.kind);
  if (!is_valid_event_kind(kind)) throw std::logic_error("invalid event kind " + std::to_string(kind));
  if (e.stack > stack_ids_.size()) throw std::logic_error("stack id " + std::to_string(e.stack) + " was not interned");
}

void ChunkEncoder::add(const Event& event) {
  if (event.kind == EventKind::annotation) return add_annotation(event, {});
  check(event);
  add_row(event, event.aux);
}

void ChunkEncoder::add_annotation(const Event& event, const KeyValues& metadata) {
  if (event.kind != EventKind::annotation)
    throw std::logic_error("an annotation with a " + std::string(event_kind_name(event.kind)) + " event");
  check(event);
  std::vector<uint32_t> keys, values;
  keys.reserve(metadata.size());
  values.reserve(metadata.size());
  for (const auto& [key, value] : metadata) {
    keys.push_back(intern_string(key));
    values.push_back(intern_string(value));
  }
  std::string annotation, ids;
  packed_ids(annotation, annotation_field::keys, keys, ids);
  packed_ids(annotation, annotation_field::values, values, ids);
  wire::bytes(annotations_, chunk_field::annotations, annotation);
  add_row(event, annotation_count_++);
}

void ChunkEncoder::add_row(const Event& e, uint64_t aux) {
  if (events_ == 0) {
    base_time_ = previous_time_ = min_time_ = max_time_ = e.time_ns;
    previous_address_ = 0;
  }
  // Unsigned differences wrap, and the reader's unsigned sums wrap back: any order round-trips.
  columns_[kKind].put(static_cast<uint32_t>(e.kind));
  columns_[kTimeDelta].put(wire::zigzag(static_cast<int64_t>(e.time_ns - previous_time_)));
  columns_[kDevice].put(e.device);
  columns_[kStream].put(e.stream);
  columns_[kAddressDelta].put(wire::zigzag(static_cast<int64_t>(e.address - previous_address_)));
  columns_[kSize].put(e.size);
  columns_[kStack].put(e.stack);
  columns_[kFlags].put(e.flags);
  columns_[kAux].put(aux);
  columns_[kPool].put(e.pool);
  previous_time_ = e.time_ns;
  previous_address_ = e.address;
  min_time_ = std::min(min_time_, e.time_ns);
  max_time_ = std::max(max_time_, e.time_ns);
  has_flags_ |= e.flags != 0;
  has_aux_ |= aux != 0;
  has_pool_ |= e.pool != kDefaultPool;
  ++events_per_kind_[static_cast<uint32_t>(e.kind)];
  ++events_;
}

bool ChunkEncoder::pending() const { return events_ > 0 || pending_tables(); }

bool ChunkEncoder::pending_tables() const {
  return new_string_count_ > 0 || new_frame_count_ > 0 || new_stack_count_ > 0 || annotation_count_ > 0;
}

ChunkRows ChunkEncoder::take_rows() {
  // An annotation's index restarts with each chunk, and its metadata goes out with the tables.
  if (annotation_count_ > 0) throw std::logic_error("take_rows() of a chunk with annotations");
  ChunkRows rows;
  rows_into(rows);
  return rows;
}

void ChunkEncoder::rows_into(ChunkRows& rows) {
  rows.columns.clear();
  rows.pool.clear();
  rows.summary = {first_event_, events_, events_ ? min_time_ : 0, events_ ? max_time_ : 0};
  rows.base_time_ns = events_ ? base_time_ : 0;
  if (events_ > 0) {
    using namespace chunk_field;
    static constexpr uint32_t kFields[kPool] = {kind, time_delta, device, stream, address_delta,
                                                size, stack,      flags,  aux};
    size_t bytes = 0;
    for (const Column& column : columns_) bytes += column.bytes().size() + 16;
    rows.columns.reserve(bytes);
    for (int column = kKind; column < kPool; ++column) {
      // All-zero flags and aux columns are left out (the format allows it): most events have neither.
      if ((column == kFlags && !has_flags_) || (column == kAux && !has_aux_)) continue;
      wire::bytes(rows.columns, kFields[column], columns_[column].bytes());
    }
    if (has_pool_) wire::bytes(rows.pool, chunk_field::pool, columns_[kPool].bytes());
  }
  first_event_ += events_;
  events_ = 0;
  for (Column& column : columns_) column.clear();
  has_flags_ = has_aux_ = has_pool_ = false;
}

std::string_view ChunkEncoder::encode(ChunkSummary& summary) {
  rows_into(rows_);
  return encode(rows_, summary);
}

std::string_view ChunkEncoder::encode(const ChunkRows& rows, ChunkSummary& summary) {
  summary = rows.summary;
  encoded_.clear();
  encoded_.reserve(rows.columns.size() + rows.pool.size() + new_strings_.size() + new_frames_.size() +
                   new_stacks_.size() + annotations_.size() + 64);
  put_chunk(encoded_, rows, first_string_, first_frame_, first_stack_, true);
  for (std::string* table : {&new_strings_, &new_frames_, &new_stacks_, &annotations_}) table->clear();
  new_string_count_ = new_frame_count_ = new_stack_count_ = annotation_count_ = 0;
  first_string_ = string_count();
  first_frame_ = frame_count();
  first_stack_ = stack_count() + 1;
  return encoded_;
}

std::string ChunkEncoder::encode_alone(const ChunkRows& rows, ChunkRows::Compressed& compressed) const {
  compressed.first_string = string_count();
  compressed.first_frame = frame_count();
  compressed.first_stack = stack_count() + 1;
  std::string out;
  out.reserve(rows.columns.size() + rows.pool.size() + 64);
  put_chunk(out, rows, compressed.first_string, compressed.first_frame, compressed.first_stack, false);
  return out;
}

bool ChunkEncoder::compressed_matches(const ChunkRows& rows, int level) const {
  const auto& c = rows.compressed;
  return c && c->level == level && c->first_string == string_count() && c->first_frame == frame_count() &&
         c->first_stack == stack_count() + 1;
}

bool ChunkEncoder::compressed_is_next(const ChunkRows& rows, int level) const {
  return !pending_tables() && compressed_matches(rows, level);
}

void ChunkEncoder::put_chunk(std::string& out, const ChunkRows& rows, uint32_t first_string, uint32_t first_frame,
                             uint32_t first_stack, bool tables) const {
  using namespace chunk_field;
  wire::scalar(out, first_event, rows.summary.first_event);
  wire::scalar(out, base_time_ns, rows.base_time_ns);
  out += rows.columns;
  wire::scalar(out, first_string_id, first_string);
  if (tables) out += new_strings_;
  wire::scalar(out, first_frame_id, first_frame);
  if (tables) out += new_frames_;
  wire::scalar(out, first_stack_id, first_stack);
  if (tables) out += new_stacks_, out += annotations_;
  out += rows.pool;  // field 19: protobuf's order is by field number
}

}  // namespace memreplay::format
