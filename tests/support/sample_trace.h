// What the trace format tests share (writer_contract_test.cpp, trace_format_test.cpp): a sample
// trace that exercises every field, reading a file back, and file helpers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "proto/event.h"
#include "proto/frame_text.h"
#include "proto/trace.pb.h"
#include "proto/trace_reader.h"
#include "tests/support/test_support.h"

namespace memreplay::testing {

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::string& path, std::string_view bytes) {
  // A new file rather than a truncated one: ext4 flushes a file truncated with unwritten data,
  // which makes thousands of rewrites crawl.
  std::filesystem::remove(path);
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A header with every field set but the format version, which the writers set. Built through the
// generated setters, not a TextFormat parse: TextFormat fills the map field through reflection in
// Debian's uninstrumented libprotobuf, which crashes under ThreadSanitizer, and the writer suites
// run there (.ci/run). sample_header_text() is the same header as text; a test holds them equal.
inline proto::TraceHeader sample_header() {
  proto::TraceHeader h;
  h.set_source("api");
  h.set_source_file("/data/run.pickle");
  h.set_capture_time_ns(1722000000123456789ull);
  h.set_command_line("python train.py --batch 64");
  h.set_pid(4242);
  proto::DeviceInfo* d0 = h.add_devices();
  d0->set_index(0);
  d0->set_name("NVIDIA H200");
  d0->set_total_memory(150109880320ull);
  d0->set_cap_bytes(867416960ull);
  h.add_devices()->set_index(1);
  (*h.mutable_allocator_settings())["expandable_segments"] = "True";
  (*h.mutable_allocator_settings())["max_split_size"] = "-1";
  h.set_producer("a test");
  h.set_starts_mid_run(true);
  proto::PoolInfo* graph = h.add_pools();
  graph->set_id(1);
  graph->set_kind("graph");
  graph->set_torch_id_first(1);
  graph->set_name("g1");
  proto::PoolInfo* mempool = h.add_pools();
  mempool->set_id(65535);
  mempool->set_kind("mempool");
  mempool->set_torch_id_second(18446744073709551615ull);
  h.set_captures_flagged(true);
  return h;
}

inline constexpr std::string_view sample_header_text = R"pb(
  source: "api"
  source_file: "/data/run.pickle"
  capture_time_ns: 1722000000123456789
  command_line: "python train.py --batch 64"
  pid: 4242
  devices { index: 0 name: "NVIDIA H200" total_memory: 150109880320 cap_bytes: 867416960 }
  devices { index: 1 }
  allocator_settings { key: "expandable_segments" value: "True" }
  allocator_settings { key: "max_split_size" value: "-1" }
  producer: "a test"
  starts_mid_run: true
  pools { id: 1 kind: "graph" torch_id_first: 1 name: "g1" }
  pools { id: 65535 kind: "mempool" torch_id_second: 18446744073709551615 }
  captures_flagged: true
)pb";

inline const std::vector<std::vector<FrameText>>& sample_stacks() {
  static const std::vector<std::vector<FrameText>> stacks = {
      {{"model.py", 12, "forward"}, {"train.py", 40, "step"}},
      {{"ops.py", 7, "matmul"}, {"model.py", 12, "forward"}, {"train.py", 40, "step"}},
      {},
      {{"train.py", 41, "step"}},
  };
  return stacks;
}

// One trace exercising every field: all kinds, flag bits, aux, extreme values, non-monotonic
// times, addresses going both ways, stacks and annotations (with and without metadata).
struct SampleTrace {
  std::vector<Event> events;
  std::vector<KeyValues> annotations;  // of the annotation events, in order
  std::vector<uint32_t> stack_ids;  // of sample_stacks()
};

inline SampleTrace sample_trace(size_t count) {
  SampleTrace t;
  for (size_t i = 0; i < sample_stacks().size(); ++i) t.stack_ids.push_back(static_cast<uint32_t>(i + 1));
  for (size_t i = 0; i < count; ++i) {
    Event e;
    e.kind = static_cast<EventKind>(1 + i % (kEventKindCount - 1));
    e.device = static_cast<uint32_t>(i % 3);
    e.time_ns = 1'722'000'000'000'000'000ull + i * 1000 - (i % 5 == 0 ? 2500 : 0);
    e.stream = i % 4 == 0 ? 0 : 0x7f00'0000'1200ull + i % 2;
    e.address = i % 10 == 9 ? ~uint64_t{0} - 15 : 0x7f12'3400'0000ull + (i * 7919 % 13) * 4096;
    e.size = (i % 6) * 512 + 1;
    e.stack = i % 3 == 0 ? 0 : t.stack_ids[i % t.stack_ids.size()];
    e.flags = i % 7 == 0 ? kPreexisting : i % 11 == 0 ? (kFailed | kInferred) : i % 13 == 0 ? kCaptured : 0;
    e.aux = i % 9 == 0 ? ~uint64_t{0} - i : 0;
    e.pool = i % 8 == 5 ? (i % 16 == 5 ? 1 : 65535) : kDefaultPool;
    if (i == 3) e.time_ns = 0;
    if (e.kind == EventKind::annotation) {
      e.aux = 0;  // the writer assigns it
      KeyValues kv;
      if (t.annotations.size() % 2 == 0) kv = {{"name", "step " + std::to_string(i)}, {"phase", "forward"}};
      t.annotations.push_back(kv);
    }
    t.events.push_back(e);
  }
  return t;
}

// Annotation events' aux is the writer's business (an index into their chunk): compare the rest.
inline std::vector<Event> without_annotation_aux(std::vector<Event> events) {
  for (Event& e : events)
    if (e.kind == EventKind::annotation) e.aux = 0;
  return events;
}

struct ReadBack {
  std::vector<Event> events;
  std::vector<KeyValues> annotations;
  bool complete = false;
};

inline ReadBack read_back(const std::string& path) {
  TraceReader reader(path);
  ReadBack r;
  r.complete = reader.complete();
  std::vector<Event> batch;
  while (reader.next_batch(batch)) {
    for (const Event& e : batch)
      if (e.kind == EventKind::annotation) r.annotations.push_back(reader.annotation(e));
    r.events.insert(r.events.end(), batch.begin(), batch.end());
  }
  r.events = without_annotation_aux(std::move(r.events));
  return r;
}

// Checks that what was read is exactly the first events of the trace, annotations included.
inline void expect_prefix(const ReadBack& r, const SampleTrace& t) {
  ASSERT_LE(r.events.size(), t.events.size());
  EXPECT_TRUE(std::equal(r.events.begin(), r.events.end(), t.events.begin()));
  ASSERT_LE(r.annotations.size(), t.annotations.size());
  EXPECT_TRUE(std::equal(r.annotations.begin(), r.annotations.end(), t.annotations.begin()));
}

}  // namespace memreplay::testing
