// memreplay export: the memory-viz snapshot round-trips through our own importer, event for
// event; its segments are tiled by their blocks as torch.cuda._memory_viz.segsum asserts; the
// Perfetto JSON parses and pairs every allocation's begin with its end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "replayer/replay_runner.h"
#include "results/memory_viz_export.h"
#include "tests/support/cli_run.h"
#include "tests/support/same_figures.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

// The events a PyTorch trace holds (not the state it starts in, annotations or inferred events).
std::vector<Event> trace_actions(const std::string& path) {
  std::vector<Event> out;
  for (Event e : TraceReader::read_all(path)) {
    if (e.has_flag(kPreexisting) || e.has_flag(kInferred) || e.kind == EventKind::annotation) continue;
    e.stack = 0;  // ids are the file's own; frames are compared below through the peak stacks
    e.time_ns /= 1000;  // the snapshot keeps microseconds
    out.push_back(e);
  }
  return out;
}

// Runs `python3 ARGUMENTS`; its stdout and stderr go to `output`. Returns its exit status.
int run_python(const std::string& arguments, std::string& output) {
  const testing::CliRun run = testing::run_shell("python3 " + arguments);
  output += run.out;
  return run.status;
}

// Python's own pickle module reads the snapshot and _memory_viz.segsum's invariant holds for every
// segment: its blocks tile it, and allocated_size is the sum of its blocks that are not inactive.
// Prints "SEGMENTS ENTRIES"; returns the exit status.
int segsum_check(const std::string& pickle, std::string& output) {
  const std::string script = pickle + ".check.py";
  std::ofstream(script)
      << "import pickle,sys\n"
         "d=pickle.load(open(sys.argv[1],'rb'))\n"
         "assert d['device_traces'][0][0]['action']=='segment_alloc'\n"
         "for s in d['segments']:\n"
         "  at=s['address']\n"
         "  for b in s['blocks']:\n"
         "    assert b['address']==at, (hex(at), b)\n"
         "    at+=b['size']\n"
         "  assert at==s['address']+s['total_size']\n"
         "  assert s['allocated_size']==sum(b['size'] for b in s['blocks'] if b['state']!='inactive')\n"
         "print(len(d['segments']), len(d['device_traces'][0]))\n";
  return run_python(script + " " + pickle, output);
}

class Export : public testing::CliTest {};

TEST_F(Export, MemoryVizSnapshotRoundTripsThroughTheImporter) {
  for (const std::string name : {"gpt2_train.stacks", "multistream_pipeline.default", "gpt2_train.truncated"}) {
    const std::string original = testing::imported_trace(name);
    const auto out = results::export_memory_viz(original, 0);
    const std::string pickle = path(name + ".pickle"), again = path(name + ".mrt");
    std::ofstream(pickle, std::ios::binary) << out.pickle;
    {
      TraceWriter writer(again);
      import_file(pickle, writer);
    }
    const auto a = trace_actions(original), b = trace_actions(again);
    ASSERT_EQ(a.size(), b.size()) << name;
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << name << " event " << i;
    // The same replay numbers, through the re-imported file.
    ReplayOptions o;
    o.trace_path = original;
    const auto before = run_replay(o);
    o.trace_path = again;
    const auto after = run_replay(o);
    EXPECT_EQ(before.requested_peak, after.requested_peak) << name;
    EXPECT_EQ(before.events, after.events) << name;
    if (!TraceReader(original).header().starts_mid_run()) EXPECT_EQ(before.reserved_peak, after.reserved_peak) << name;
  }
}

TEST_F(Export, MemoryVizSegmentsAreTiledByTheirBlocks) {
  const auto out = results::export_memory_viz(testing::imported_trace("gpt2_train.stacks"), 0);
  std::ofstream(path("snap.pickle"), std::ios::binary) << out.pickle;
  std::string output;
  ASSERT_EQ(segsum_check(path("snap.pickle"), output), 0) << output;
  EXPECT_EQ(output, std::to_string(out.segments) + " " + std::to_string(out.entries) + "\n");
}

// A snapshot torch 2.11 wrote on the H200 (tools/gpu/memory_viz_check.py: 5 Adam steps of 8 Linear
// layers, an empty_cache()): imported, exported again, it gives torch's own entries back, every
// field, and the same segments.
TEST_F(Export, RealTorchSnapshotComesBackEntryForEntry) {
  const std::string original = (testing::source_dir() / "tests/data/h200_torch211_snapshot.pickle.xz").string();
  const std::string trace = path("real.mrt"), again = path("again.pickle");
  {
    TraceWriter writer(trace);
    import_file(original, writer);
  }
  std::ofstream(again, std::ios::binary) << results::export_memory_viz(trace, 0).pickle;
  const std::string script =
      "import lzma,pickle,sys\n"
      "a=pickle.load(lzma.open(sys.argv[1]));b=pickle.load(open(sys.argv[2],'rb'))\n"
      "ta,tb=a['device_traces'][0],b['device_traces'][0]\n"
      "assert len(ta)==len(tb),(len(ta),len(tb))\n"
      "for i,(x,y) in enumerate(zip(ta,tb)):\n"
      "  for k in ('action','addr','size','stream','time_us','frames'):\n"
      "    assert x.get(k,[])==y.get(k,[]),(i,k,x.get(k),y.get(k))\n"
      "seg=lambda d:sorted((s['address'],s['total_size'],s['stream']) for s in d['segments'])\n"
      "assert seg(a)==seg(b)\n"
      "print(len(ta),len(a['segments']))\n";
  std::ofstream(path("compare.py")) << script;
  std::string output;
  ASSERT_EQ(run_python(path("compare.py") + " " + original + " " + again, output), 0) << output;
  EXPECT_EQ(output, "977 43\n");
}

// Every annotation of a trace: device, time in microseconds (what a snapshot keeps), metadata.
std::vector<std::tuple<uint32_t, uint64_t, KeyValues>> annotations_of(const std::string& path) {
  std::vector<std::tuple<uint32_t, uint64_t, KeyValues>> out;
  TraceReader reader(path);
  std::vector<Event> batch;
  while (reader.next_batch(batch))
    for (const Event& e : batch)
      if (e.kind == EventKind::annotation) out.emplace_back(e.device, e.time_ns / 1000, reader.annotation(e));
  return out;
}

// A copy of trace `from` at `to`, with the same header, whose events `keep(event, writer)` writes.
template <class Keep>
void rewrite_trace(const std::string& from, const std::string& to, Keep keep) {
  TraceReader reader(from);
  TraceWriter writer(to);
  writer.begin(reader.header());
  std::vector<Event> batch;
  while (reader.next_batch(batch))
    for (const Event& e : batch) keep(e, writer);
  writer.finish();
}

std::string reimported(const std::string& trace, const std::string& dir, const std::string& name) {
  const std::string pickle = dir + "/" + name + ".pickle", again = dir + "/" + name + ".again.mrt";
  std::ofstream(pickle, std::ios::binary) << results::export_memory_viz(trace, 0).pickle;
  TraceWriter writer(again);
  import_file(pickle, writer);
  return again;
}

TEST_F(Export, MemoryVizKeepsBothKindsOfAnnotation) {
  const std::string plain = testing::imported_trace("multistream_pipeline.default"), marked = path("marked.mrt");
  uint64_t n = 0;
  rewrite_trace(plain, marked, [&](const Event& e, TraceWriter& writer) {
    if (e.kind == EventKind::annotation) return;
    writer.append(e);
    if (++n % 100 != 0 || e.has_flag(kPreexisting)) return;
    Event mark;
    mark.kind = EventKind::annotation;
    mark.time_ns = e.time_ns;
    if (n % 200 == 0)
      writer.append_annotation(mark, {{"user_metadata", "step " + std::to_string(n)}});
    else
      writer.append_annotation(mark, {{"stage", "START"}, {"name", "forward " + std::to_string(n)}});
  });
  const auto before = annotations_of(marked), after = annotations_of(reimported(marked, dir_.string(), "marked"));
  ASSERT_GE(before.size(), 4u);
  EXPECT_EQ(before, after);
}

// Graph and MemPool segments keep PyTorch's pool ids, so the importer puts every event back in
// its pool and the header names the same pools.
TEST_F(Export, MemoryVizPrivatePoolsKeepTheirIds) {
  for (const std::string job : {"graphs_shared_pool", "mempool_kv_cache", "graphed_callables"}) {
    const std::string original = path(job + ".mrt");
    {
      TraceWriter writer(original);
      import_file((testing::source_dir() / "tests/data/pools" / (job + ".pickle.xz")).string(), writer);
    }
    const TraceReader first(original);
    ASSERT_GT(first.header().pools_size(), 0) << job << ": the test needs private pools";
    const std::string again = reimported(original, dir_.string(), job);
    const TraceReader second(again);
    ASSERT_EQ(first.header().pools_size(), second.header().pools_size()) << job;
    for (int i = 0; i < first.header().pools_size(); ++i) {
      const auto &a = first.header().pools(i), &b = second.header().pools(i);
      EXPECT_EQ(a.id(), b.id()) << job;
      EXPECT_EQ(a.kind(), b.kind()) << job;
      EXPECT_EQ(a.torch_id_first(), b.torch_id_first()) << job;
      EXPECT_EQ(a.torch_id_second(), b.torch_id_second()) << job;
    }
    const auto x = trace_actions(original), y = trace_actions(again);
    ASSERT_EQ(x.size(), y.size()) << job;
    size_t in_private = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x[i], y[i]) << job << " event " << i;
      in_private += x[i].pool != kDefaultPool;
    }
    EXPECT_GT(in_private, 0u) << job;
  }
}

// A trace without segment events (an RMM log) is exported with the segments of a replay, and says so.
TEST_F(Export, MemoryVizTakesTheSegmentsOfATraceWithoutThemFromAReplay) {
  const std::string csv = path("rmm.csv"), trace = path("rmm.mrt");
  std::ofstream(csv) << "Thread,Time,Action,Pointer,Size,Stream\n"
                        "1,00:00:00.000001,allocate,0x7f0000000000,1024,0x0\n"
                        "1,00:00:00.000002,free,0x7f0000000000,1024,0x0\n";
  {
    TraceWriter writer(trace);
    import_file(csv, writer);
  }
  const auto r = run("export " + trace + " --to memory-viz -o " + path("x.pickle"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out,
              ::testing::HasSubstr(
                  "no segment events: segments, block addresses and block sizes are those of a replay under pytorch"));
  // segment_alloc, alloc, free_requested, free_completed; the 2 MiB segment stays cached at the end.
  EXPECT_NE(r.out.find("4 trace entries and 1 segments"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(path("x.pickle")));
}

// multistream_pipeline without its segment events (what an interposer or RMM log would hold): the
// export's segments are the pytorch policy's, so the re-imported trace replays to the same numbers,
// its segments are tiled by their blocks, and every alloc and free comes back in order.
TEST_F(Export, MemoryVizReplayedSegmentsRoundTripThroughTheImporter) {
  const std::string original = testing::imported_trace("multistream_pipeline.default"), bare = path("bare.mrt");
  rewrite_trace(original, bare, [](const Event& e, TraceWriter& writer) {
    if ((e.kind == EventKind::alloc || e.kind == EventKind::free_requested || e.kind == EventKind::free_completed) &&
        !e.has_flag(kPreexisting))
      writer.append(e);
  });
  const auto out = results::export_memory_viz(bare, 0, "pytorch");
  EXPECT_EQ(out.segments_replayed_under, "pytorch");
  std::ofstream(path("bare.pickle"), std::ios::binary) << out.pickle;
  const std::string again = path("again.mrt");
  {
    TraceWriter writer(again);
    import_file(path("bare.pickle"), writer);
  }
  ReplayOptions o;
  o.trace_path = bare;
  const auto before = run_replay(o);
  o.trace_path = again;
  const auto after = run_replay(o);
  testing::expect_same_figures(after, before);
  EXPECT_EQ(before.events, after.events);
  size_t segment_events = 0;
  std::vector<std::tuple<EventKind, uint64_t, uint64_t, uint64_t>> a, b;  // kind, size, stream, time_us
  for (const Event& e : TraceReader::read_all(bare)) a.emplace_back(e.kind, e.size, e.stream, e.time_ns / 1000);
  for (const Event& e : TraceReader::read_all(again)) {
    if (e.kind == EventKind::segment_alloc || e.kind == EventKind::segment_free) {
      ++segment_events;
      continue;
    }
    if (e.has_flag(kPreexisting) || e.has_flag(kInferred)) continue;
    b.emplace_back(e.kind, e.size, e.stream, e.time_ns / 1000);
  }
  EXPECT_EQ(a, b);
  EXPECT_EQ(segment_events, before.device_alloc_calls + before.device_free_calls);

  std::string output;
  ASSERT_EQ(segsum_check(path("bare.pickle"), output), 0) << output;
  EXPECT_EQ(output, std::to_string(out.segments) + " " + std::to_string(out.entries) + "\n");
}

TEST_F(Export, PerfettoHasCountersPerPolicyAndPairedAllocationSlices) {
  const std::string trace = testing::imported_trace("multistream_pipeline.default");
  const auto r = run("export " + trace + " --to perfetto --policy pytorch --policy passthrough -o " + path("p.json"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(testing::slurp(path("p.json")));
  std::map<std::string, int> counters;
  int begins = 0, ends = 0;
  uint64_t max_reserved = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "C") {
      ++counters[e["name"]];
      if (e["name"] == "bytes (pytorch)") max_reserved = std::max(max_reserved, e["args"]["reserved"].get<uint64_t>());
    }
    begins += ph == "b";
    ends += ph == "e";
  }
  EXPECT_GT(counters["bytes (pytorch)"], 10);
  EXPECT_GT(counters["bytes (passthrough)"], 10);
  EXPECT_EQ(max_reserved, 683671552u);  // groundtruth/replay/multistream_pipeline.default.default
  EXPECT_EQ(begins, 546);  // every alloc of the trace
  EXPECT_GT(ends, 500);
  EXPECT_LE(ends, begins);
}

// The trace-event format (Chrome's "Trace Event Format" document) checked strictly, since no viewer
// (trace_processor, catapult) installs here from Debian or npm: every event's phase, ids and
// fields, every async end after its begin; and the coalesced counters exact where it matters:
// the reserved line step for step, and each peak the replay measured.
TEST_F(Export, PerfettoOfGpt2GenerateIsStrictTraceEventJsonAndExactWhereItMatters) {
  const std::string trace = testing::imported_trace("gpt2_generate.default");
  const auto r = run("export " + trace +
                     " --to perfetto --policy pytorch --policy pytorch:expandable_segments:True -o " + path("g.json"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto bytes = fs::file_size(path("g.json"));
  std::printf("perfetto export of gpt2_generate, 2 policies: %.1f MB\n", double(bytes) / 1e6);
  EXPECT_LT(bytes, 60u * 1000 * 1000) << "it was 134 MB with one counter sample per event";
  const auto j = nlohmann::json::parse(testing::slurp(path("g.json")));
  ASSERT_TRUE(j.is_object());
  ASSERT_TRUE(j["traceEvents"].is_array());
  EXPECT_EQ(j["displayTimeUnit"], "ms");
  std::map<std::string, std::vector<nlohmann::json>> counters;
  std::map<std::pair<std::string, uint64_t>, double> open;
  std::set<uint64_t> begun;
  size_t begins = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.is_object());
    ASSERT_TRUE(e["ph"].is_string()) << e;
    ASSERT_TRUE(e["pid"].is_number_integer()) << e;
    ASSERT_TRUE(e["name"].is_string()) << e;
    const std::string ph = e["ph"];
    if (ph == "M") {
      ASSERT_TRUE(e["name"] == "process_name" || e["name"] == "thread_name") << e;
      ASSERT_TRUE(e["args"]["name"].is_string()) << e;
      if (e["name"] == "thread_name") ASSERT_TRUE(e["tid"].is_number_integer()) << e;
      continue;
    }
    ASSERT_TRUE(e["ts"].is_number() && e["ts"].get<double>() >= 0) << e;
    if (ph == "C") {
      ASSERT_TRUE(e["args"].is_object()) << e;
      for (const auto& [k, v] : e["args"].items()) ASSERT_TRUE(v.is_number_unsigned()) << k << " in " << e;
      auto& series = counters[e["name"]];
      if (!series.empty()) ASSERT_GE(e["ts"].get<double>(), series.back()["ts"].get<double>()) << e;
      series.push_back(e);
    } else if (ph == "b" || ph == "e") {
      ASSERT_TRUE(e["cat"].is_string() && e["id"].is_number_unsigned() && e["tid"].is_number_integer()) << e;
      const auto key = std::make_pair(e["cat"].get<std::string>(), e["id"].get<uint64_t>());
      if (ph == "b") {
        ASSERT_TRUE(begun.insert(key.second).second) << "id begun twice: " << e;
        open[key] = e["ts"].get<double>();
        ++begins;
      } else {
        const auto it = open.find(key);
        ASSERT_NE(it, open.end()) << "an end with no begin: " << e;
        ASSERT_GE(e["ts"].get<double>(), it->second) << e;
        open.erase(it);
      }
    } else {
      FAIL() << "a phase the export does not write: " << e;
    }
  }
  EXPECT_GT(begins, 100000u);
  for (const std::string policy : {"pytorch", "pytorch:expandable_segments:True"}) {
    ReplayOptions o;
    o.trace_path = trace;
    o.policy_spec = policy;
    o.timeline_points = size_t{1} << 21;
    const ReplayMetrics m = run_replay(o);
    const auto& samples = counters["bytes (" + policy + ")"];
    EXPECT_LT(samples.size(), m.timeline.size() / 4) << policy;
    uint64_t reserved = 0, allocated = 0, requested = 0;
    std::vector<uint64_t> steps, expected_steps;
    for (const auto& c : samples) {
      reserved = std::max(reserved, c["args"]["reserved"].get<uint64_t>());
      allocated = std::max(allocated, c["args"]["allocated"].get<uint64_t>());
      requested = std::max(requested, c["args"]["requested"].get<uint64_t>());
      if (steps.empty() || steps.back() != c["args"]["reserved"]) steps.push_back(c["args"]["reserved"]);
    }
    for (const auto& p : m.timeline)
      if (expected_steps.empty() || expected_steps.back() != p.reserved) expected_steps.push_back(p.reserved);
    EXPECT_EQ(reserved, m.reserved_peak) << policy;
    EXPECT_EQ(allocated, m.allocated_peak) << policy;
    EXPECT_EQ(requested, m.requested_peak) << policy;
    EXPECT_EQ(steps, expected_steps) << policy << ": the reserved line, step for step";
  }
}

}  // namespace
}  // namespace memreplay
