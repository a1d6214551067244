// memreplay export: the memory-viz snapshot round-trips through our own importer, event for
// event; its segments are tiled by their blocks as torch.cuda._memory_viz.segsum asserts; the
// Perfetto JSON parses and pairs every allocation's begin with its end.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "proto/trace_reader.h"
#include "recorder/import/import.h"
#include "recorder/import/trace_writer.h"
#include "replayer/replay_runner.h"
#include "results/memory_viz_export.h"
#include "tests/cli_run.h"
#include "tests/test_support.h"

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

class Export : public testing::TempDirTest {};

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
  // Python's own pickle module reads it; segsum's invariant holds for every segment.
  const std::string script =
      "import pickle,sys\n"
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
  std::ofstream(path("check.py")) << script;
  const std::string command = "python3 " + path("check.py") + " " + path("snap.pickle") + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  std::string output;
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << output;
  EXPECT_EQ(output, std::to_string(out.segments) + " " + std::to_string(out.entries) + "\n");
}

// A snapshot torch 2.11 wrote on the H200 (tools/gpu_memory_viz_check.py: 5 Adam steps of 8 Linear
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
  const std::string command = "python3 " + path("compare.py") + " " + original + " " + again + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  std::string output;
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << output;
  EXPECT_EQ(output, "977 43\n");
}

TEST_F(Export, MemoryVizRefusesATraceWithoutSegments) {
  // An RMM log has allocations but no segments.
  const std::string csv = path("rmm.csv"), trace = path("rmm.mrt");
  std::ofstream(csv) << "Thread,Time,Action,Pointer,Size,Stream\n"
                        "1,00:00:00.000001,allocate,0x7f0000000000,1024,0x0\n"
                        "1,00:00:00.000002,free,0x7f0000000000,1024,0x0\n";
  {
    TraceWriter writer(trace);
    import_file(csv, writer);
  }
  const auto r = testing::run_memreplay("export " + trace + " --to memory-viz -o " + path("x.pickle"), dir_);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("no segment events"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("x.pickle")));
}

TEST_F(Export, PerfettoHasCountersPerPolicyAndPairedAllocationSlices) {
  const std::string trace = testing::imported_trace("multistream_pipeline.default");
  const auto r = testing::run_memreplay("export " + trace + " --to perfetto --policy pytorch --policy passthrough -o " +
                                            path("p.json"),
                                        dir_);
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
  EXPECT_EQ(begins, 546);               // every alloc of the trace
  EXPECT_GT(ends, 500);
  EXPECT_LE(ends, begins);
}

}  // namespace
}  // namespace memreplay
