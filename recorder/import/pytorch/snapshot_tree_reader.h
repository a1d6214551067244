// The reading half of the snapshot importer as a template over the value type: the snapshot dict
// checked and turned into what the output stage needs (SnapshotContent, snapshot_reader.h). V is
// pickle::Value for a pickle (SnapshotReader), or any type with its interface: TreeType and
// RefType (an integer that tells objects apart, as Value::id()), V(const TreeType*, RefType),
// kind(), id(), as_bool/as_int/int_value/as_float/as_str, size(), items(), pairs(), get(key),
// for_each_item/for_each_pair, shape_id()/shaped_values() (0 and null when it has no shapes), and
// a function snapshot_value_error(file, V, what) found by argument-dependent lookup, returning the
// InputError for a bad value (for a pickle: naming its byte offset). One reader, so that a
// snapshot read from Python objects in memory becomes byte for byte the trace its pickle becomes.
//
// Errors are InputError naming where the value at fault is, or the trace entry's index. A work
// budget (about 2 units per input byte) refuses pickles whose aliased objects would expand into
// far more work and memory than their size.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/input_error.h"
#include "recorder/import/pytorch/snapshot_reader.h"
#include "recorder/import/unpickler/pickle_text.h"

namespace memreplay {

namespace pickle {
inline InputError snapshot_value_error(const std::string& file, Value at, const std::string& what) {
  return InputError::at_byte(file, at.offset(), what);
}
}  // namespace pickle

template <class V>
class SnapshotTreeReader {
  using Kind = pickle::Kind;
  using Field = snapshot_entry::Field;
  static constexpr size_t kFieldCount = snapshot_entry::kFieldCount;

 public:
  using Tree = typename V::TreeType;
  using Ref = typename V::RefType;

  // `input_bytes` bounds the work (see charge()); `growing`: input still being decoded, or null.
  SnapshotTreeReader(const std::string& file, uint64_t input_bytes, const GrowingInput* growing,
                     TraceEntryListener* listener)
      : file_(file),
        budget_(2 * input_bytes + 4096),
        budgeted_bytes_(input_bytes),
        growing_(growing),
        listener_(listener) {}

  // Items just appended to root["device_traces"][list_index], in order, before read().
  void take(uint32_t list_index, const Tree& tree, std::span<const Ref> items) {
    tree_ = &tree;
    if (items.empty()) return;
    SnapshotDevice& dev = device(list_index, "device_traces", V(&tree, items.front()));
    for (const Ref ref : items) read_entry(list_index, dev.spool.size(), V(&tree, ref), dev);
  }

  // The rest of the tree (whose streamed device trace lists are empty); the spools are sealed.
  SnapshotContent& read(const Tree& tree) {
    tree_ = &tree;
    read_snapshot(tree.root());
    return c_;
  }

 private:
  // Errors point at the value at fault (in a pickle: its byte offset).
  [[noreturn]] void fail(V at, const std::string& what) const { throw snapshot_value_error(file_, at, what); }
  [[noreturn]] void fail_entry(uint32_t device, uint64_t index, const std::string& what) const {
    throw InputError::at_event(file_, index, "device " + std::to_string(device) + " trace entry: " + what);
  }

  // The work budget: every entry, key/value pair, segment, block, frame and annotation costs a
  // unit, and annotation text a unit per 16 bytes. A real snapshot spends about 8 input bytes
  // per unit (gpt2_generate: 32.4 MB, 4.3 M units), so 2 units per input byte is never reached;
  // a pickle that aliases one dict, list or string many times over (legal, a few bytes per
  // reference) would otherwise expand into work and memory proportional to references × size.
  // While the input still grows, the budget grows with it: the bytes decoded so far, and if they
  // do not suffice, more of them, never the whole input at once (that would wait for the decoder
  // to finish and leave the parse nothing to overlap it with). Once all of it is there, the
  // budget is the same as when it was all there from the start.
  [[gnu::always_inline]] void charge(uint64_t units, V at) {
    if (units <= budget_) [[likely]] {
      budget_ -= units;
      return;
    }
    charge_beyond_budget(units, at);
  }
  [[gnu::noinline]] void charge_beyond_budget(uint64_t units, V at) {
    while (units > budget_ && growing_ != nullptr) {
      const uint64_t want = budgeted_bytes_ + std::max<uint64_t>((units - budget_ + 1) / 2, kBudgetStepBytes);
      const uint64_t have = growing_->wait_for(want);
      budget_ += 2 * (have - budgeted_bytes_);
      budgeted_bytes_ = have;
      if (have < want) growing_ = nullptr;  // complete
    }
    if (units > budget_)
      fail(at,
           "the snapshot refers to the same objects over and over (more work than its size "
           "can hold); refusing to expand it");
    budget_ -= units;
  }

  SnapshotDevice& device(uint64_t index, const std::string& where, V at) {
    if (index >= kMaxDevices) fail(at, where + ": device index " + std::to_string(index) + " is out of range");
    while (index >= c_.devices.size()) c_.devices.emplace_back(file_);
    return c_.devices[index];
  }

  // --- the snapshot dict ---

  void read_snapshot(V root) {
    if (!root.is(Kind::dict))
      fail(root, "not a memory snapshot: the pickle holds a " + std::string(kind_name(root.kind())) +
                     ", expected the dict torch.cuda.memory._snapshot() returns");
    std::optional<V> segments, traces, settings, annotations;
    for (auto [k, v] : root.pairs()) {
      const std::string_view key = k.as_str();
      if (key == "segments")
        segments = v;
      else if (key == "device_traces")
        traces = v;
      else if (key == "allocator_settings")
        settings = v;
      else if (key == "external_annotations")
        annotations = v;
    }
    if (!traces || !segments)
      fail(root,
           "not a memory snapshot with a trace: no 'device_traces' or 'segments' key "
           "(record with torch.cuda.memory._record_memory_history(enabled=\"all\"))");

    c_.header.set_source("pytorch-snapshot");
    c_.header.set_source_file(file_);
    if (!traces->is(Kind::list)) fail(*traces, "'device_traces' is not a list");
    if (traces->size() > 0) device(traces->size() - 1, "device_traces", *traces);
    if (!segments->is(Kind::list)) fail(*segments, "'segments' is not a list");
    read_segments(*segments);
    uint32_t d = 0;
    for (V trace : traces->items()) read_trace(d++, trace);  // lists not streamed while unpickling
    for (SnapshotDevice& dev : c_.devices) dev.spool.seal();
    if (annotations) read_annotations(*annotations);
    if (settings)
      for (auto& [key, text] : pickle::flatten_dict(*settings)) (*c_.header.mutable_allocator_settings())[key] = text;

    uint64_t capture = 0;
    for (const SnapshotDevice& dev : c_.devices) {
      capture = std::max(capture, dev.spool.last_time());
      if (!dev.annotations.empty()) capture = std::max(capture, dev.annotations.back().time_ns);
    }
    c_.header.set_capture_time_ns(capture);
    for (size_t i = 0; i < c_.devices.size(); ++i) c_.header.add_devices()->set_index(static_cast<uint32_t>(i));
  }

  // --- field access with errors that say where ---

  static const char* field_name(Field f) {
    switch (f) {
      case Field::action: return "action";
      case Field::addr: return "addr";
      case Field::size: return "size";
      case Field::stream: return "stream";
      case Field::time_us: return "time_us";
      case Field::frames: return "frames";
      case Field::device_free: return "device_free";
      case Field::user_metadata: return "user_metadata";
      case Field::other: break;
    }
    return "?";
  }
  template <typename Fail>
  static int64_t integer(V v, std::string_view name, Fail&& fail) {
    const std::optional<int64_t> n = v.int_value();
    if (!n) fail("'" + std::string(name) + "' is a " + std::string(kind_name(v.kind())) + ", expected an int");
    return *n;
  }
  template <typename Fail>
  static uint64_t non_negative(V v, std::string_view name, Fail&& fail) {
    const int64_t n = integer(v, name, fail);
    if (n < 0) fail("'" + std::string(name) + "' is negative (" + std::to_string(n) + ")");
    return static_cast<uint64_t>(n);
  }
  template <typename Fail>
  static uint64_t time_ns(V v, Fail&& fail) {
    const uint64_t us = non_negative(v, "time_us", fail);
    if (us > std::numeric_limits<uint64_t>::max() / 1000) fail("'time_us' is out of range");
    return us * 1000;
  }

  // --- segments: the state after the last trace entry ---

  void read_segments(V segments) {
    uint64_t index = 0;
    for (V seg : segments.items()) {
      const std::string where = "segments[" + std::to_string(index++) + "]";
      auto bad = [&](const std::string& what) { fail(seg, where + ": " + what); };
      if (!seg.is(Kind::dict)) bad("not a dict");
      charge(1 + seg.size(), seg);
      auto need = [&](V dict, const char* key, const std::string& at) {
        auto v = dict.get(key);
        if (!v) fail(dict, at + ": missing key '" + key + "'");
        return *v;
      };
      SegmentState s;
      s.address = non_negative(need(seg, "address", where), "address", bad);
      s.size = non_negative(need(seg, "total_size", where), "total_size", bad);
      s.stream = c_.streams.label(static_cast<uint64_t>(integer(need(seg, "stream", where), "stream", bad)));
      const auto expandable = seg.get("is_expandable");
      s.expandable = expandable && expandable->is(Kind::boolean) && expandable->as_bool();
      if (const auto pool = seg.get("segment_pool_id")) s.pool = pool_id(*pool, where);
      const uint64_t dev = non_negative(need(seg, "device", where), "device", bad);
      AllocatorState& state = device(dev, where, seg).final_state;
      state.segments.push_back(s);

      const V blocks = need(seg, "blocks", where);
      if (!blocks.is(Kind::list)) bad("'blocks' is not a list");
      charge(1 + blocks.size(), blocks);
      uint64_t block_index = 0, offset = s.address;
      for (V block : blocks.items()) {
        const std::string at = where + ".blocks[" + std::to_string(block_index++) + "]";
        auto bad_block = [&](const std::string& what) { fail(block, at + ": " + what); };
        if (!block.is(Kind::dict)) bad_block("not a dict");
        charge(block.size(), block);
        BlockState b;
        // Old snapshots have no block address: blocks tile the segment in order.
        const auto address = block.get("address");
        b.address = address ? non_negative(*address, "address", bad_block) : offset;
        b.size = non_negative(need(block, "size", at), "size", bad_block);
        offset = b.address + b.size;
        const auto requested = block.get("requested_size");
        b.requested = requested ? non_negative(*requested, "requested_size", bad_block) : b.size;
        b.stream = s.stream;
        const V state_value = need(block, "state", at);
        const std::string_view block_state = state_value.as_str();
        if (!state_value.is(Kind::str)) bad_block("'state' is not a str");
        if (block_state == "inactive") continue;
        if (block_state == "active_pending_free" || block_state == "active_awaiting_free")
          b.pending_free = true;
        else if (block_state != "active_allocated")
          bad_block("unknown block state '" + std::string(block_state) + "'");
        state.blocks.push_back(b);
      }
    }
    for (SnapshotDevice& dev : c_.devices) {
      auto by_address = [](const auto& a, const auto& b) { return a.address < b.address; };
      std::sort(dev.final_state.segments.begin(), dev.final_state.segments.end(), by_address);
      std::sort(dev.final_state.blocks.begin(), dev.final_state.blocks.end(), by_address);
    }
  }

  // segment_pool_id, PyTorch's MempoolId_t pair, as a pool id (pool_assignment.h).
  uint16_t pool_id(V pool, const std::string& where) {
    if (!(pool.is(Kind::tuple) || pool.is(Kind::list)) || pool.size() != 2)
      fail(pool, where + ": 'segment_pool_id' is not a pair");
    std::array<uint64_t, 2> pair{};
    size_t i = 0;
    for (V part : pool.items())
      pair[i++] =
          non_negative(part, "segment_pool_id", [&](const std::string& what) { fail(part, where + ": " + what); });
    const auto id = c_.pool_ids.id(pair[0], pair[1]);
    if (!id) fail(pool, where + ": more private pools than a trace can name (65535)");
    return *id;
  }

  // --- device_traces[d] ---

  void read_trace(uint32_t d, V list) {
    if (!list.is(Kind::list)) fail(list, "device_traces[" + std::to_string(d) + "] is not a list");
    charge(list.size(), list);
    SnapshotDevice& dev = c_.devices[d];
    list.for_each_item([&](V entry) { read_entry(d, dev.spool.size(), entry, dev); });
  }

  // The fields of one trace entry, found in one pass over its pairs.
  struct EntryFields {
    std::array<Ref, kFieldCount> ref;  // value ids by Field, valid where `seen` says
    uint32_t seen = 0;
    bool has(Field f) const { return ((seen >> static_cast<unsigned>(f)) & 1u) != 0; }
  };

  // Errors of read_entry, built out of line so that the hot path is only tests.
  [[noreturn, gnu::cold, gnu::noinline]] void bad_field(uint32_t d, uint64_t index, Field f,
                                                        const EntryFields& e) const {
    const std::string name = field_name(f);
    if (!e.has(f)) fail_entry(d, index, "missing key '" + name + "'");
    const V v(tree_, e.ref[static_cast<size_t>(f)]);
    if (const auto n = v.int_value())
      fail_entry(d, index, "'" + name + "' is out of range (" + std::to_string(*n) + ")");
    fail_entry(d, index, "'" + name + "' is a " + std::string(kind_name(v.kind())) + ", expected an int");
  }
  [[noreturn, gnu::cold, gnu::noinline]] void bad_action(uint32_t d, uint64_t index, V action) const {
    if (!action.is(Kind::str)) fail_entry(d, index, "'action' is not a str");
    fail_entry(d, index, "unknown action '" + std::string(action.as_str().substr(0, 64)) + "'");
  }

  // An int field in [0, max]; anything else is an error naming the field.
  [[gnu::always_inline]] uint64_t field_number(const EntryFields& fields, Field f, uint64_t max, uint32_t d,
                                               uint64_t index) const {
    if (!fields.has(f)) bad_field(d, index, f, fields);
    const std::optional<int64_t> n = V(tree_, fields.ref[static_cast<size_t>(f)]).int_value();
    if (!n || *n < 0 || static_cast<uint64_t>(*n) > max) bad_field(d, index, f, fields);
    return static_cast<uint64_t>(*n);
  }

  void read_entry(uint32_t d, uint64_t index, V entry, SnapshotDevice& out) {
    if (!entry.is(Kind::dict))
      fail_entry(d, index, "is a " + std::string(kind_name(entry.kind())) + ", expected a dict");
    charge(entry.size(), entry);  // an entry aliased many times with many keys is work, too
    EntryFields fields;
    const uint32_t shape = entry.shape_id();
    if (shape != 0 && shape == shape_.id) {  // same keys as the last entry: fields by position
      const Ref* values = entry.shaped_values();
      if (shape_.usual && read_usual(d, values, out)) return;
      const size_t pairs = shape_.fields.size();
      for (size_t i = 0; i < pairs; ++i) fields.ref[static_cast<size_t>(shape_.fields[i])] = values[i];
      fields.seen = shape_.seen;
    } else {
      shape_.id = shape;
      shape_.fields.clear();
      entry.for_each_pair([&](V k, V v) {
        const Field f = keys_.get(k);
        fields.ref[static_cast<size_t>(f)] = v.id();
        fields.seen |= 1u << static_cast<unsigned>(f);
        shape_.fields.push_back(f);
      });
      shape_.seen = fields.seen;
      plan_usual_shape();
    }
    auto value = [&](Field f) { return V(tree_, fields.ref[static_cast<size_t>(f)]); };

    if (!fields.has(Field::action)) bad_field(d, index, Field::action, fields);
    const uint32_t kind = actions_.get(value(Field::action));
    if (kind == 0) bad_action(d, index, value(Field::action));
    TraceStep step;
    step.kind = static_cast<EventKind>(kind);
    uint64_t time_ns = 0;
    // time_us: absent before PyTorch ≈2.1, then 0. ×1000 must fit in 64 bits.
    if (fields.has(Field::time_us)) time_ns = field_number(fields, Field::time_us, UINT64_MAX / 1000, d, index) * 1000;
    if (fields.has(Field::stream)) {  // a cudaStream_t as a Python int: keep its bits as they are
      const std::optional<int64_t> stream = value(Field::stream).int_value();
      if (!stream) bad_field(d, index, Field::stream, fields);
      step.stream = c_.streams.label(static_cast<uint64_t>(*stream));
    } else {
      step.stream = c_.streams.label(0);
    }
    switch (step.kind) {
      case EventKind::oom:  // no address; the free bytes CUDA reported instead
        step.size = field_number(fields, Field::size, INT64_MAX, d, index);
        step.address = field_number(fields, Field::device_free, INT64_MAX, d, index);
        break;
      case EventKind::snapshot:
        step.size = fields.has(Field::size) ? field_number(fields, Field::size, INT64_MAX, d, index) : 0;
        break;
      case EventKind::annotation: {  // user_defined: its payload is user_metadata
        KeyValues kv;
        if (fields.has(Field::user_metadata)) {
          kv.emplace_back("user_metadata", pickle::python_text(value(Field::user_metadata)));
          charge(kv.back().second.size() / 16, entry);
        }
        step.address = c_.annotation_texts.size();
        c_.annotation_texts.push_back(std::move(kv));
        break;
      }
      default:
        step.address = field_number(fields, Field::addr, INT64_MAX, d, index);
        step.size = field_number(fields, Field::size, INT64_MAX, d, index);
        if (!fields.has(Field::stream)) bad_field(d, index, Field::stream, fields);
        break;
    }
    uint32_t stack = 0;
    if (fields.has(Field::frames)) {
      auto bad = [&](const std::string& what) { fail_entry(d, index, what); };
      stack = local_stack(value(Field::frames), bad);
    }
    out.spool.push(step, time_ns, stack);
    if (listener_ != nullptr) listener_->entry(d, step, time_ns, c_.streams.handle(step.stream), stack);
  }

  // The usual shape: the keys of an alloc, free or segment event (action, addr, size, stream;
  // time_us and frames where there; other keys ignored). read_usual reads an entry of that shape by the
  // values' positions, without EntryFields.
  void plan_usual_shape() {
    constexpr uint32_t kNeeded =
        (1u << static_cast<unsigned>(Field::action)) | (1u << static_cast<unsigned>(Field::addr)) |
        (1u << static_cast<unsigned>(Field::size)) | (1u << static_cast<unsigned>(Field::stream));
    // A repeated key's last value counts, as in the generic path (and in Python).
    for (size_t i = 0; i < shape_.fields.size(); ++i)
      shape_.at[static_cast<size_t>(shape_.fields[i])] = static_cast<uint32_t>(i);
    shape_.usual = (shape_.seen & kNeeded) == kNeeded;
  }

  // An entry of the usual shape whose action is an alloc, free or segment event and whose fields
  // are all in range: read as read_entry's generic path reads it (the same checks in the same
  // order, the same stream label, spool push and listener call). Anything else returns false
  // having changed nothing the generic path does not do again the same way (a stream label).
  [[gnu::always_inline]] bool read_usual(uint32_t d, const Ref* values, SnapshotDevice& out) {
    auto value = [&](Field f) { return V(tree_, values[shape_.at[static_cast<size_t>(f)]]); };
    const uint32_t kind = actions_.get(value(Field::action));
    if (kind == 0 || kind == static_cast<uint32_t>(EventKind::oom) ||
        kind == static_cast<uint32_t>(EventKind::snapshot) || kind == static_cast<uint32_t>(EventKind::annotation))
      return false;
    uint64_t time_ns = 0;
    if (shape_.has(Field::time_us)) {
      const std::optional<int64_t> us = value(Field::time_us).int_value();
      if (!us || *us < 0 || static_cast<uint64_t>(*us) > UINT64_MAX / 1000) return false;
      time_ns = static_cast<uint64_t>(*us) * 1000;
    }
    const std::optional<int64_t> stream = value(Field::stream).int_value();
    const std::optional<int64_t> addr = value(Field::addr).int_value();
    const std::optional<int64_t> size = value(Field::size).int_value();
    if (!stream || !addr || *addr < 0 || !size || *size < 0) return false;
    // A plain Value and a flag, not std::optional<Value>: its zeroing was a rep stos per entry.
    const bool has_frames = shape_.has(Field::frames);
    const V frames = has_frames ? value(Field::frames) : V();
    if (has_frames && !frames.is(Kind::list)) return false;
    const uint32_t label = c_.streams.label(static_cast<uint64_t>(*stream));
    // The listener and the spool each get a TraceStep made from these values, not a copy of one
    // in memory: copying a struct just stored reloads it in wider pieces than its stores, a
    // store-forwarding stall per entry (a quarter of this function's samples).
    const auto make_step = [&] {
      return TraceStep{.address = static_cast<uint64_t>(*addr),
                       .size = static_cast<uint64_t>(*size),
                       .stream = label,
                       .kind = static_cast<EventKind>(kind)};
    };
    uint32_t stack = 0;
    if (has_frames) {
      const uint64_t index = out.spool.size();
      auto bad = [&](const std::string& what) { fail_entry(d, index, what); };
      stack = local_stack(frames, bad);
    }
    out.spool.push(make_step(), time_ns, stack);
    if (listener_ != nullptr) listener_->entry(d, make_step(), time_ns, c_.streams.handle(label), stack);
    return true;
  }

  // The 1-based index in c_.stacks of a frames list (0 for none), shared by aliased lists.
  template <typename Fail>
  uint32_t local_stack(V frames, Fail&& bad) {
    if (!frames.is(Kind::list)) bad("'frames' is not a list");
    if (frames.size() == 0) return 0;
    if (auto it = stack_of_list_.find(frames.id()); it != stack_of_list_.end()) return it->second;
    charge(frames.size(), frames);
    std::vector<FrameText> stack;
    stack.reserve(frames.size());
    for (V frame : frames.items()) {
      if (!frame.is(Kind::dict)) bad("a frame is not a dict");
      charge(frame.size(), frame);
      FrameText f;
      bool has_filename = false, has_line = false, has_name = false;
      for (auto [k, v] : frame.pairs()) {
        const std::string_view key = k.as_str();
        if (key == "filename" && v.is(Kind::str))
          f.filename = v.as_str(), has_filename = true;
        else if (key == "name" && v.is(Kind::str))
          f.name = v.as_str(), has_name = true;
        else if (key == "line" && v.is(Kind::integer)) {
          f.line = static_cast<uint32_t>(std::clamp<int64_t>(v.as_int(), 0, UINT32_MAX));
          has_line = true;
        }
      }
      if (!has_filename || !has_line || !has_name) bad("a frame lacks a str 'filename', an int 'line' or a str 'name'");
      stack.push_back(std::move(f));
    }
    c_.stacks.push_back(std::move(stack));
    if (listener_ != nullptr) listener_->stack(c_.stacks.back());
    const auto id = static_cast<uint32_t>(c_.stacks.size());
    stack_of_list_.emplace(frames.id(), id);
    return id;
  }

  // --- external_annotations ---

  void read_annotations(V list) {
    if (!list.is(Kind::list)) fail(list, "'external_annotations' is not a list");
    charge(list.size(), list);
    uint64_t index = 0;
    for (V a : list.items()) {
      const std::string where = "external_annotations[" + std::to_string(index++) + "]";
      auto bad = [&](const std::string& what) { fail(a, where + ": " + what); };
      if (!a.is(Kind::dict)) bad("not a dict");
      charge(a.size(), a);
      Event e;
      e.kind = EventKind::annotation;
      KeyValues kv;
      bool has_device = false, has_time = false;
      for (auto [k, v] : a.pairs()) {
        const std::string key = pickle::python_text(k);
        if (key == "device") {
          e.device = static_cast<uint32_t>(std::min<uint64_t>(non_negative(v, key, bad), kMaxDevices));
          has_device = true;
        } else if (key == "time_us") {
          e.time_ns = time_ns(v, bad);
          has_time = true;
        } else {
          kv.emplace_back(key, pickle::python_text(v));
          charge((key.size() + kv.back().second.size()) / 16, v);
        }
      }
      if (!has_device || !has_time) bad("missing key 'device' or 'time_us'");
      e.aux = c_.annotation_texts.size();
      c_.annotation_texts.push_back(std::move(kv));
      device(e.device, where, a).annotations.push_back(e);
    }
    for (SnapshotDevice& dev : c_.devices)
      std::stable_sort(dev.annotations.begin(), dev.annotations.end(),
                       [](const Event& x, const Event& y) { return x.time_ns < y.time_ns; });
  }

  // Far above any real machine; keeps a corrupt device index from sizing vectors by it.
  static constexpr uint64_t kMaxDevices = 1024;
  // How much more decoded input the work budget asks for at a time while the input still grows.
  static constexpr uint64_t kBudgetStepBytes = uint64_t{1} << 20;

  const Tree* tree_ = nullptr;  // while unpickling, the tree being built
  const std::string& file_;
  SnapshotContent c_;
  std::unordered_map<Ref, uint32_t> stack_of_list_;  // frames list id -> local stack
  snapshot_entry::NodeCache<Field, V> keys_{snapshot_entry::classify_key<V>};
  // The Field of each key position of the last entry's dict shape (see Value::shape_id).
  struct {
    uint32_t id = 0;
    std::vector<Field> fields;
    uint32_t seen = 0;
    bool usual = false;  // see plan_usual_shape
    std::array<uint32_t, kFieldCount> at{};  // a field's position, where `seen` has it
    bool has(Field f) const { return ((seen >> static_cast<unsigned>(f)) & 1u) != 0; }
  } shape_;
  snapshot_entry::NodeCache<uint32_t, V> actions_{snapshot_entry::classify_action<V>};
  uint64_t budget_;
  uint64_t budgeted_bytes_;
  const GrowingInput* growing_;
  TraceEntryListener* listener_;
};

}  // namespace memreplay
