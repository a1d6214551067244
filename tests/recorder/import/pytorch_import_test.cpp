// The PyTorch snapshot importer against the real traces in shared/traces (golden counts from
// shared/groundtruth/runs, the final `segments` state, inferred empty_cache calls, stacks,
// annotations) and against small hand-made snapshots (ordering, headers, errors).
#include <gtest/gtest.h>
#include <lzma.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_sink.h"
#include "recorder/import/import.h"
#include "recorder/import/input/decompress.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "recorder/import/unpickler/pickle_reader.h"
#include "tests/support/test_support.h"
#include "tests/support/tiny_snapshot.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;
using pickle::Kind;
using pickle::Value;

using testing::real_data_path;

// device_traces[0][2] has action 'bogus'
const std::string kUnknownAction(
    "\x80\x04\x95\xaf\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x08\x73\x65\x67\x6d\x65\x6e\x74\x73"
    "\x94\x5d\x94\x8c\x0d\x64\x65\x76\x69\x63\x65\x5f\x74\x72\x61\x63\x65\x73\x94\x5d\x94\x5d\x94\x28"
    "\x7d\x94\x28\x8c\x06\x61\x63\x74\x69\x6f\x6e\x94\x8c\x05\x61\x6c\x6c\x6f\x63\x94\x8c\x04\x61\x64"
    "\x64\x72\x94\x4d\x00\x10\x8c\x04\x73\x69\x7a\x65\x94\x4b\x64\x8c\x06\x73\x74\x72\x65\x61\x6d\x94"
    "\x4b\x00\x8c\x07\x74\x69\x6d\x65\x5f\x75\x73\x94\x4b\x05\x75\x7d\x94\x28\x68\x07\x8c\x0e\x66\x72"
    "\x65\x65\x5f\x72\x65\x71\x75\x65\x73\x74\x65\x64\x94\x68\x09\x4d\x00\x10\x68\x0a\x4b\x64\x68\x0b"
    "\x4b\x00\x68\x0c\x4b\x05\x75\x7d\x94\x28\x68\x07\x8c\x05\x62\x6f\x67\x75\x73\x94\x68\x09\x4d\x00"
    "\x10\x68\x0a\x4b\x64\x68\x0b\x4b\x00\x68\x0c\x4b\x05\x75\x65\x61\x75\x2e",
    186);

// device_traces[0][1] (an alloc) has no 'addr'
const std::string kMissingAddr(
    "\x80\x04\x95\x7c\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x08\x73\x65\x67\x6d\x65\x6e\x74\x73"
    "\x94\x5d\x94\x8c\x0d\x64\x65\x76\x69\x63\x65\x5f\x74\x72\x61\x63\x65\x73\x94\x5d\x94\x5d\x94\x28"
    "\x7d\x94\x28\x8c\x06\x61\x63\x74\x69\x6f\x6e\x94\x8c\x05\x61\x6c\x6c\x6f\x63\x94\x8c\x04\x61\x64"
    "\x64\x72\x94\x4d\x00\x10\x8c\x04\x73\x69\x7a\x65\x94\x4b\x64\x8c\x06\x73\x74\x72\x65\x61\x6d\x94"
    "\x4b\x00\x8c\x07\x74\x69\x6d\x65\x5f\x75\x73\x94\x4b\x05\x75\x7d\x94\x28\x68\x07\x68\x08\x68\x0a"
    "\x4b\x64\x68\x0b\x4b\x00\x68\x0c\x4b\x05\x75\x65\x61\x75\x2e",
    135);

// device_traces[1][0] has size '100' (a str)
const std::string kSizeIsStr(
    "\x80\x04\x95\x6e\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x08\x73\x65\x67\x6d\x65\x6e\x74\x73"
    "\x94\x5d\x94\x8c\x0d\x64\x65\x76\x69\x63\x65\x5f\x74\x72\x61\x63\x65\x73\x94\x5d\x94\x28\x5d\x94"
    "\x5d\x94\x7d\x94\x28\x8c\x06\x61\x63\x74\x69\x6f\x6e\x94\x8c\x05\x61\x6c\x6c\x6f\x63\x94\x8c\x04"
    "\x61\x64\x64\x72\x94\x4d\x00\x10\x8c\x04\x73\x69\x7a\x65\x94\x8c\x03\x31\x30\x30\x94\x8c\x06\x73"
    "\x74\x72\x65\x61\x6d\x94\x4b\x00\x8c\x07\x74\x69\x6d\x65\x5f\x75\x73\x94\x4b\x05\x75\x61\x65\x75"
    "\x2e",
    121);

// a list, not a dict
const std::string kNotASnapshot(
    "\x80\x04\x95\x0b\x00\x00\x00\x00\x00\x00\x00\x5d\x94\x28\x4b\x01\x4b\x02\x4b\x03\x65\x2e", 22);

// a dict without device_traces (torch.cuda.memory_snapshot() output)
const std::string kNoTrace(
    "\x80\x04\x95\x11\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x8c\x08\x73\x65\x67\x6d\x65\x6e\x74\x73\x94"
    "\x5d\x94\x73\x2e",
    28);

bool is_synthetic(const Event& e) {
  return e.has_flag(kPreexisting) || e.has_flag(kInferred) || e.kind == EventKind::annotation;
}

// --- the final state a snapshot records, read straight from its pickle ---

struct DeviceState {
  std::set<std::pair<uint64_t, uint64_t>> segments;  // (address, size)
  std::set<std::pair<uint64_t, uint64_t>> blocks;  // live: (address, requested bytes)
  std::set<uint64_t> pending;  // addresses of active_pending_free blocks
  bool operator==(const DeviceState&) const = default;
};

std::map<uint32_t, DeviceState> final_state_of(const std::string& pickle_bytes) {
  const pickle::Tree tree = pickle::unpickle(pickle_bytes, "final");
  std::map<uint32_t, DeviceState> state;
  for (Value seg : tree.root().get("segments")->items()) {
    DeviceState& d = state[static_cast<uint32_t>(seg.get("device")->as_int())];
    d.segments.emplace(seg.get("address")->as_int(), seg.get("total_size")->as_int());
    for (Value block : seg.get("blocks")->items()) {
      const std::string_view s = block.get("state")->as_str();
      if (s == "inactive") continue;
      const auto address = static_cast<uint64_t>(block.get("address")->as_int());
      d.blocks.emplace(address, block.get("requested_size")->as_int());
      if (s == "active_pending_free") d.pending.insert(address);
    }
  }
  return state;
}

// The state after applying every event forward, from an empty allocator.
std::map<uint32_t, DeviceState> apply_forward(const std::vector<Event>& events) {
  std::map<uint32_t, std::map<uint64_t, uint64_t>> segments, blocks;
  std::map<uint32_t, std::set<uint64_t>> pending;
  for (const Event& e : events) {
    auto& segs = segments[e.device];
    switch (e.kind) {
      case EventKind::segment_alloc: segs[e.address] = e.size; break;
      case EventKind::segment_free: segs.erase(e.address); break;
      case EventKind::segment_map: {  // merge with touching mapped ranges, as the snapshot shows them
        uint64_t lo = e.address, hi = e.address + e.size;
        auto next = segs.find(hi);
        if (next != segs.end()) hi += next->second, segs.erase(next);
        for (auto& [a, size] : segs)
          if (a + size == lo) {
            lo = a;
            break;
          }
        segs[lo] = hi - lo;
        break;
      }
      case EventKind::segment_unmap: {
        auto it = std::prev(segs.upper_bound(e.address));
        const uint64_t start = it->first, end = it->first + it->second;
        segs.erase(it);
        if (start < e.address) segs[start] = e.address - start;
        if (e.address + e.size < end) segs[e.address + e.size] = end - e.address - e.size;
        break;
      }
      case EventKind::alloc: blocks[e.device][e.address] = e.size; break;
      case EventKind::free_requested: pending[e.device].insert(e.address); break;
      case EventKind::free_completed:
        blocks[e.device].erase(e.address);
        pending[e.device].erase(e.address);
        break;
      default: break;
    }
  }
  std::map<uint32_t, DeviceState> state;
  for (auto& [d, segs] : segments)
    for (auto& [a, size] : segs) state[d].segments.emplace(a, size);
  for (auto& [d, b] : blocks)
    for (auto& [a, size] : b) state[d].blocks.emplace(a, size);
  for (auto& [d, p] : pending) state[d].pending = p;
  for (auto it = state.begin(); it != state.end();)  // devices left with nothing compare as absent
    it = (it->second == DeviceState{}) ? state.erase(it) : std::next(it);
  return state;
}

// --- the real traces, each imported once ---

struct Imported {
  std::string pickle_bytes;
  CollectingSink sink;
};

const Imported& imported(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Imported>> cache;
  auto& slot = cache[name];
  if (!slot) {
    slot = std::make_unique<Imported>();
    const std::string path = real_data_path(fs::path("traces") / (name + ".pickle.xz")).string();
    slot->pickle_bytes = read_decompressed(path);
    import_pytorch_snapshot_pickle(slot->pickle_bytes, path, slot->sink);
  }
  return *slot;
}

std::vector<std::string> real_traces() { return testing::real_data_names("traces", ".pickle.xz"); }

class RealTrace : public ::testing::TestWithParam<std::string> {};

// Per-kind counts of recorded events equal the trace's action counts in the ground truth.
TEST_P(RealTrace, CountsMatchGroundTruth) {
  const Imported& t = imported(GetParam());
  const nlohmann::json truth = testing::read_json(real_data_path("groundtruth/runs/" + GetParam() + ".json"));
  std::map<std::string, uint64_t> counts;
  uint64_t recorded = 0;
  for (const Event& e : t.sink.events)
    if (!is_synthetic(e)) ++counts[std::string(event_kind_name(e.kind))], ++recorded;
  std::map<std::string, uint64_t> expected;
  for (const auto& [action, n] : truth.at("actions").items()) expected[action] = n.get<uint64_t>();
  EXPECT_EQ(counts, expected);
  EXPECT_EQ(recorded, truth.at("trace_entries").get<uint64_t>());
  EXPECT_TRUE(t.sink.finished);
}

// Preexisting state + every event, applied forward, gives exactly the snapshot's final state.
TEST_P(RealTrace, ForwardReplayReachesTheFinalSegments) {
  const Imported& t = imported(GetParam());
  EXPECT_EQ(apply_forward(t.sink.events), final_state_of(t.pickle_bytes));
}

TEST_P(RealTrace, HeaderDescribesTheSnapshot) {
  const Imported& t = imported(GetParam());
  const proto::TraceHeader& h = t.sink.header;
  EXPECT_EQ(h.source(), "pytorch-snapshot");
  EXPECT_NE(h.source_file().find(GetParam()), std::string::npos);
  ASSERT_EQ(h.devices_size(), 1);
  EXPECT_EQ(h.devices(0).index(), 0u);
  uint64_t last = 0;
  for (const Event& e : t.sink.events)
    if (!is_synthetic(e)) last = e.time_ns;
  EXPECT_EQ(h.capture_time_ns(), last);
  EXPECT_EQ(h.allocator_settings().at("expandable_segments"), "False");
  EXPECT_EQ(h.allocator_settings().at("max_split_size"), "-1");
  EXPECT_EQ(h.allocator_settings().at("garbage_collection_threshold"), "0.0");
  EXPECT_EQ(h.allocator_settings().at("roundup_power2_divisions.1"), "0");
  EXPECT_EQ(h.allocator_settings().at("PYTORCH_CUDA_ALLOC_CONF"), "");
  // Only the ring-buffer-truncated run starts mid-run; its rebuilt state comes first.
  const bool truncated = GetParam() == "gpt2_train.truncated";
  EXPECT_EQ(h.starts_mid_run(), truncated);
  bool seen_recorded = false;
  for (const Event& e : t.sink.events) {
    if (e.has_flag(kPreexisting)) {
      EXPECT_FALSE(seen_recorded) << "preexisting event after the trace began";
    }
    seen_recorded |= !e.has_flag(kPreexisting);
  }
}

// torch.cuda.empty_cache() leaves only segment_free entries: inferred exactly where the
// emptycache run called it (every 7th step), nowhere else.
TEST_P(RealTrace, EmptyCacheInferredOnlyWhereCalled) {
  const Imported& t = imported(GetParam());
  std::vector<uint64_t> at_entry;
  uint64_t entry = 0;
  const auto& events = t.sink.events;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind == EventKind::empty_cache) {
      EXPECT_TRUE(e.has_flag(kInferred));
      ASSERT_LT(i + 1, events.size());
      EXPECT_EQ(events[i + 1].kind, EventKind::segment_free);
      EXPECT_EQ(e.time_ns, events[i + 1].time_ns);
      at_entry.push_back(entry);
    }
    if (!is_synthetic(e)) ++entry;
  }
  if (GetParam() == "vit_infer_varbatch.emptycache")
    EXPECT_EQ(at_entry, (std::vector<uint64_t>{7324, 14491, 21646, 28802, 35960}));
  else
    EXPECT_TRUE(at_entry.empty());
}

// Stream, size and time come straight from the entries; the trace is in time order.
TEST_P(RealTrace, EventsKeepTraceOrderAndUnits) {
  const Imported& t = imported(GetParam());
  const pickle::Tree tree = pickle::unpickle(t.pickle_bytes, "x");
  const Value first = *tree.root().get("device_traces")->items().begin();
  std::vector<Event> recorded;
  for (const Event& e : t.sink.events)
    if (!is_synthetic(e)) recorded.push_back(e);
  ASSERT_EQ(recorded.size(), first.size());
  size_t i = 0;
  for (Value entry : first.items()) {
    const Event& e = recorded[i++];
    ASSERT_EQ(event_kind_name(e.kind), entry.get("action")->as_str());
    ASSERT_EQ(e.time_ns, static_cast<uint64_t>(entry.get("time_us")->as_int()) * 1000);
    ASSERT_EQ(e.size, static_cast<uint64_t>(entry.get("size")->as_int()));
    ASSERT_EQ(e.address, static_cast<uint64_t>(entry.get("addr")->as_int()));
    ASSERT_EQ(e.stream, static_cast<uint64_t>(entry.get("stream")->as_int()));
  }
}

INSTANTIATE_TEST_SUITE_P(PytorchImport, RealTrace, ::testing::ValuesIn(real_traces()), [](const auto& info) {
  std::string name = info.param;
  std::replace(name.begin(), name.end(), '.', '_');
  return name;
});

// Without the real traces RealTrace has no instances: this is what fails then, naming the folder.
TEST(PytorchImport, FindsEveryRealTrace) {
  const fs::path dir = real_data_path("traces");
  EXPECT_EQ(real_traces().size(), 9u) << "*.pickle.xz in " << dir;
}

TEST(PytorchImport, TruncatedTraceRebuildsTheLiveState) {
  const Imported& t = imported("gpt2_train.truncated");
  size_t segments = 0, blocks = 0;
  for (const Event& e : t.sink.events) {
    if (!e.has_flag(kPreexisting)) continue;
    if (e.kind == EventKind::segment_alloc) ++segments;
    if (e.kind == EventKind::alloc) {
      ++blocks;
      EXPECT_GE(e.aux, e.size);  // block size in the allocator >= requested bytes
      EXPECT_EQ(e.aux % 512, 0u);
    }
  }
  EXPECT_EQ(segments, 137u);  // no segment_alloc survived in the ring buffer
  EXPECT_GT(blocks, 0u);
}

TEST(PytorchImport, StacksCarryTheRecordedFrames) {
  const Imported& t = imported("gpt2_train.stacks");
  ASSERT_FALSE(t.sink.events.empty());
  const Event& first = t.sink.events.front();
  ASSERT_EQ(first.kind, EventKind::segment_alloc);
  ASSERT_GT(first.stack, 0u);
  const auto& frames = t.sink.stacks.at(first.stack - 1);
  ASSERT_EQ(frames.size(), 8u);
  EXPECT_EQ(frames[0], (FrameText{"site-packages/torch/nn/modules/module.py", 1370, "convert"}));
  EXPECT_EQ(frames[7], (FrameText{"workloads.py", 164, "<module>"}));
  // Every entry's frames, and only those, come back as its event's stack (allocations made
  // outside Python, e.g. by the autograd engine, have none).
  const pickle::Tree tree = pickle::unpickle(t.pickle_bytes, "x");
  std::vector<Event> recorded;
  for (const Event& e : t.sink.events)
    if (!is_synthetic(e)) recorded.push_back(e);
  size_t i = 0, with_stack = 0;
  for (Value entry : (*tree.root().get("device_traces")->items().begin()).items()) {
    const Event& e = recorded.at(i++);
    std::vector<FrameText> expected;
    for (Value f : entry.get("frames")->items())
      expected.push_back({std::string(f.get("filename")->as_str()), static_cast<uint32_t>(f.get("line")->as_int()),
                          std::string(f.get("name")->as_str())});
    if (expected.empty()) {
      ASSERT_EQ(e.stack, 0u) << i;
    } else {
      ASSERT_GT(e.stack, 0u) << i;
      ASSERT_EQ(t.sink.stacks.at(e.stack - 1), expected) << i;
      ++with_stack;
    }
  }
  EXPECT_EQ(with_stack, 8666u + 8664 + 8664 + 136);
  // The traces recorded without context have none.
  for (const Event& e : imported("gpt2_train.default").sink.events) ASSERT_EQ(e.stack, 0u);
}

TEST(PytorchImport, AnnotationsInTimeOrder) {
  const Imported& t = imported("gpt2_train.default");
  size_t count = 0;
  uint64_t previous_time = 0;
  for (size_t i = 0; i < t.sink.events.size(); ++i) {
    const Event& e = t.sink.events[i];
    if (e.kind != EventKind::annotation) continue;
    EXPECT_EQ(e.aux, count);
    const KeyValues& kv = t.sink.annotations.at(count++);
    EXPECT_EQ(kv.size(), 2u);
    for (const auto& [key, value] : kv) EXPECT_TRUE(key == "stage" || key == "name") << key;
    EXPECT_GE(e.time_ns, previous_time);
    previous_time = e.time_ns;
    // After every event of an earlier or equal time, before every later one.
    if (i > 0) {
      EXPECT_LE(t.sink.events[i - 1].time_ns, e.time_ns);
    }
    if (i + 1 < t.sink.events.size() && t.sink.events[i + 1].kind != EventKind::annotation) {
      EXPECT_GT(t.sink.events[i + 1].time_ns, e.time_ns);
    }
  }
  EXPECT_EQ(count, 48u);
  EXPECT_EQ(t.sink.annotations.front(), (KeyValues{{"stage", "START"}, {"name", "Optimizer.step#AdamW.step"}}));
}

// --- the tiny hand-made snapshot (tests/tiny_snapshot.h) ---

CollectingSink import_tiny() {
  CollectingSink sink;
  import_pytorch_snapshot_pickle(test::kTinySnapshot, "tiny.pickle", sink);
  return sink;
}

TEST(PytorchImport, TinySnapshotEveryField) {
  const CollectingSink sink = import_tiny();
  std::vector<std::string> kinds;
  for (const Event& e : sink.events) kinds.emplace_back(event_kind_name(e.kind));
  // Device 1's snapshot (t=1002) and the annotations (1002, 1006) merge in by time: an
  // annotation goes after its device's events of the same time, and on equal times device 0
  // goes before device 1.
  EXPECT_EQ(kinds, (std::vector<std::string>{"segment_alloc", "alloc", "annotation", "snapshot", "alloc",
                                             "free_requested", "free_completed", "annotation", "oom"}));
  const Event& segment = sink.events[0];
  EXPECT_EQ(segment.address, 1u << 20);
  EXPECT_EQ(segment.size, 2u << 20);
  EXPECT_EQ(segment.time_ns, 1'000'000u);
  EXPECT_EQ(sink.events[3].device, 1u);
  const Event& oom = sink.events[8];
  EXPECT_EQ(oom.size, uint64_t{1} << 40);
  EXPECT_EQ(oom.aux, 12345u);
  EXPECT_EQ(oom.address, 0u);
  ASSERT_EQ(sink.stacks.size(), 1u);  // one frames list, shared by two entries
  EXPECT_EQ(segment.stack, 1u);
  EXPECT_EQ(sink.events[1].stack, 1u);
  EXPECT_EQ(sink.events[4].stack, 0u);
  EXPECT_EQ(sink.stacks[0], (std::vector<FrameText>{{"a.py", 10, "f"}, {"b.py", 20, "g"}}));
  EXPECT_EQ(sink.annotations.at(1), (KeyValues{{"stage", "END"}, {"name", "step"}}));

  const proto::TraceHeader& h = sink.header;
  EXPECT_EQ(h.source(), "pytorch-snapshot");
  EXPECT_EQ(h.source_file(), "tiny.pickle");
  ASSERT_EQ(h.devices_size(), 2);
  EXPECT_EQ(h.devices(1).index(), 1u);
  EXPECT_EQ(h.capture_time_ns(), 1'007'000u);
  EXPECT_FALSE(h.starts_mid_run());
  const std::map<std::string, std::string> settings(h.allocator_settings().begin(), h.allocator_settings().end());
  EXPECT_EQ(settings, (std::map<std::string, std::string>{{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False"},
                                                          {"max_split_size", "-1"},
                                                          {"garbage_collection_threshold", "0.0"},
                                                          {"expandable_segments", "False"},
                                                          {"roundup_power2_divisions.1", "0"},
                                                          {"roundup_power2_divisions.2", "4"}}));
  EXPECT_TRUE(sink.finished);
}

TEST(PytorchImport, ForwardReplayOfTinySnapshot) {
  const CollectingSink sink = import_tiny();
  EXPECT_EQ(apply_forward(sink.events), final_state_of(test::kTinySnapshot));
}

// --- malformed snapshots: one-line errors that say where ---

std::string import_error(const std::string& bytes) {
  CollectingSink sink;
  try {
    import_pytorch_snapshot_pickle(bytes, "bad.pickle", sink);
  } catch (const InputError& e) {
    EXPECT_TRUE(sink.events.empty()) << "events reached the sink before the error";
    EXPECT_FALSE(sink.finished);
    return e.what();
  }
  return "";
}

TEST(PytorchImport, ErrorsNameTheEntry) {
  EXPECT_EQ(import_error(kUnknownAction), "bad.pickle: event 2: device 0 trace entry: unknown action 'bogus'");
  EXPECT_EQ(import_error(kMissingAddr), "bad.pickle: event 1: device 0 trace entry: missing key 'addr'");
  EXPECT_EQ(import_error(kSizeIsStr), "bad.pickle: event 0: device 1 trace entry: 'size' is a str, expected an int");
  EXPECT_NE(import_error(kNotASnapshot).find("not a memory snapshot: the pickle holds a list"), std::string::npos);
  EXPECT_NE(import_error(kNoTrace).find("no 'device_traces' or 'segments' key"), std::string::npos);
}

// --- the same snapshot in every container we read ---

std::string gzip_of(const std::string& data, int window_bits) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&s, data.size()) + 32, '\0');
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  s.avail_in = static_cast<uInt>(data.size());
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

std::string xz_of(const std::string& data) {
  std::string out(lzma_stream_buffer_bound(data.size()), '\0');
  size_t written = 0;
  EXPECT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(data.data()),
                                    data.size(), reinterpret_cast<uint8_t*>(out.data()), &written, out.size()),
            LZMA_OK);
  out.resize(written);
  return out;
}

std::string zstd_of(const std::string& data) {
  // With a checksum, as the zstd tool writes by default: corruption is then always detected.
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, 1);
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const size_t n = ZSTD_compress2(ctx, out.data(), out.size(), data.data(), data.size());
  ZSTD_freeCCtx(ctx);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

class TempFile {
 public:
  TempFile(const std::string& name, const std::string& content)
      : path_((fs::temp_directory_path() / ("memreplay_test_" + std::to_string(::getpid()) + "_" + name)).string()) {
    std::ofstream(path_, std::ios::binary) << content;
  }
  ~TempFile() { fs::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(PytorchImport, ReadsEveryCompressionByContent) {
  const std::vector<Event> expected = import_tiny().events;
  const std::map<std::string, std::string> variants = {
      {"plain", test::kTinySnapshot},
      {"gzip", gzip_of(test::kTinySnapshot, 15 + 16)},
      {"zlib", gzip_of(test::kTinySnapshot, 15)},
      {"xz", xz_of(test::kTinySnapshot)},
      {"zstd", zstd_of(test::kTinySnapshot)},
      {"two_gzip_members",
       gzip_of(test::kTinySnapshot.substr(0, 100), 31) + gzip_of(test::kTinySnapshot.substr(100), 31)},
      {"two_xz_streams", xz_of(test::kTinySnapshot.substr(0, 100)) + xz_of(test::kTinySnapshot.substr(100))},
      {"two_zstd_frames", zstd_of(test::kTinySnapshot.substr(0, 100)) + zstd_of(test::kTinySnapshot.substr(100))},
  };
  for (const auto& [name, bytes] : variants) {
    // Misleading names on purpose: only the content counts.
    const TempFile file(name + ".csv", bytes);
    EXPECT_EQ(detect_input_format(file.path()), InputFormat::pytorch_snapshot) << name;
    CollectingSink sink;
    import_file(file.path(), sink);
    EXPECT_EQ(sink.events, expected) << name;
    EXPECT_EQ(sink.header.source_file(), file.path());
  }
}

TEST(PytorchImport, CorruptOrTruncatedCompressionIsAnInputError) {
  for (const auto& [name, bytes] : std::map<std::string, std::string>{{"gzip", gzip_of(test::kTinySnapshot, 31)},
                                                                      {"xz", xz_of(test::kTinySnapshot)},
                                                                      {"zstd", zstd_of(test::kTinySnapshot)}}) {
    for (const size_t keep : {bytes.size() / 2, bytes.size() - 1}) {
      const TempFile file(name + "_cut", bytes.substr(0, keep));
      try {
        CollectingSink sink;
        import_file(file.path(), sink);
        ADD_FAILURE() << name << " cut to " << keep << " bytes was accepted";
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(file.path() + ": byte ", 0), 0u) << e.what();
      }
    }
    std::string corrupt = bytes;
    for (size_t i = corrupt.size() / 3; i < corrupt.size() / 3 + 8; ++i) corrupt[i] = static_cast<char>(~corrupt[i]);
    const TempFile file(name + "_corrupt", corrupt);
    CollectingSink sink;
    EXPECT_THROW(import_file(file.path(), sink), InputError) << name;
  }
}

TEST(PytorchImport, DecompressionBombIsRefused) {
  const std::string zeros(1 << 20, '\0');
  try {
    decompress(zstd_of(zeros), "bomb.zst", 1 << 16);
    ADD_FAILURE() << "no limit";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the 65536 bytes limit"), std::string::npos) << e.what();
  }
  EXPECT_EQ(decompress(zstd_of(zeros), "ok.zst", 1 << 20), zeros);
}

TEST(PytorchImport, UnknownContentIsAnInputError) {
  const TempFile text("notes.pickle", "hello, world\n");
  EXPECT_THROW(detect_input_format(text.path()), InputError);
  const TempFile empty("empty.pickle", "");
  EXPECT_THROW(detect_input_format(empty.path()), InputError);
  EXPECT_THROW(detect_input_format("/nonexistent/file.pickle"), InputError);
  const TempFile bzip2("snap.pickle.bz2", "BZh91AY&SY");
  try {
    detect_input_format(bzip2.path());
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bzip2"), std::string::npos);
  }
}

TEST(PytorchImport, BundledTracesImport) {
  for (const char* name : {"multistream_pipeline.default.pickle.xz", "gpt2_train.default.pickle.xz"}) {
    const std::string path = std::string(MEMREPLAY_SOURCE_DIR) + "/traces/" + name;
    CollectingSink sink;
    import_file(path, sink);
    EXPECT_GT(sink.events.size(), 1000u) << name;
  }
}

}  // namespace
}  // namespace memreplay
