// The CLI's smaller promises: a parse error is one line with a suggestion, help fits in 100
// columns without CLI11's type names, a broken MEMREPLAY_PLUGINS only fails commands that use
// policies, option values that mean nothing are refused, `record` of a program that cannot start
// writes no trace, and info, bound and export say what they hold and wrote.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "results/memory_viz_export.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

size_t lines_of(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

class CliMessages : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    trace_ = testing::imported_trace("gpt2_train.default");
  }
  std::string trace_;
};

TEST_F(CliMessages, AMisspeltOptionIsOneLineWithASuggestion) {
  const testing::CliRun run = testing::run_memreplay("replay " + trace_ + " --polcy pytorch", dir_);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(lines_of(run.err), 1u) << run.err;
  EXPECT_EQ(run.err.rfind("memreplay: ", 0), 0u) << run.err;
  EXPECT_NE(run.err.find("did you mean --policy?"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("see `memreplay replay --help`"), std::string::npos) << run.err;
  const testing::CliRun command = testing::run_memreplay("replya " + trace_, dir_);
  EXPECT_EQ(command.status, 2);
  EXPECT_EQ(lines_of(command.err), 1u) << command.err;
  EXPECT_NE(command.err.find("did you mean replay?"), std::string::npos) << command.err;
  const testing::CliRun missing = testing::run_memreplay("replay", dir_);
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(lines_of(missing.err), 1u) << missing.err;
}

TEST_F(CliMessages, HelpFitsIn100ColumnsWithoutTypeNames) {
  for (const std::string command : {"", "record", "import", "info", "validate", "replay", "compare", "fit", "check",
                                    "advise", "export", "report", "bound", "policies"}) {
    const testing::CliRun run = testing::run_memreplay(command + " --help", dir_);
    ASSERT_EQ(run.status, 0) << command;
    std::istringstream lines(run.out);
    for (std::string line; std::getline(lines, line);) {
      // Columns, not bytes: "×" and "÷" are two bytes each.
      size_t columns = 0;
      for (const char c : line) columns += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
      EXPECT_LE(columns, 100u) << command << ": " << line;
      std::istringstream words(line);
      for (std::string word; words >> word;) {
        for (const char* noise : {"TEXT", "UINT", "INT", "FLOAT", "REQUIRED", "HELP"})
          EXPECT_NE(word, noise) << command << ": " << line;
        EXPECT_EQ(word.find(":FILE"), std::string::npos) << command << ": " << line;
        EXPECT_EQ(word.find(":DIR"), std::string::npos) << command << ": " << line;
      }
    }
  }
}

TEST_F(CliMessages, ABrokenPluginFailsOnlyTheCommandsThatUsePolicies) {
  const std::string env = "MEMREPLAY_PLUGINS=" + path("missing.so");
  EXPECT_EQ(testing::run_memreplay("--help", dir_, env).status, 0);
  EXPECT_EQ(testing::run_memreplay("replay --help", dir_, env).status, 0);
  EXPECT_EQ(testing::run_memreplay("info " + trace_ + " --json -", dir_, env).status, 0);
  const testing::CliRun replay = testing::run_memreplay("replay " + trace_ + " --policy pytorch", dir_, env);
  EXPECT_EQ(replay.status, 2);
  EXPECT_EQ(replay.err.rfind("memreplay: MEMREPLAY_PLUGINS: ", 0), 0u) << replay.err;
  EXPECT_EQ(lines_of(replay.err), 1u) << replay.err;
}

TEST_F(CliMessages, OptionValuesThatMeanNothingAreRefused) {
  for (const std::string spec : {"pytorch:per_process_memory_fraction:0", "rmm_pool:maximum_pool_size:7"}) {
    const testing::CliRun run = testing::run_memreplay("replay " + trace_ + " --policy " + spec, dir_);
    EXPECT_EQ(run.status, 2) << spec;
    EXPECT_EQ(lines_of(run.err), 1u) << spec << "\n" << run.err;
  }
  EXPECT_NE(testing::run_memreplay("replay " + trace_ + " --policy rmm_pool:maximum_pool_size:7", dir_)
                .err.find("must be at least 256 bytes"),
            std::string::npos);
  EXPECT_EQ(
      testing::run_memreplay("replay " + trace_ + " --policy rmm_pool:maximum_pool_size:256 --json -", dir_).status,
      1);  // a pool too small for the trace: an OOM, not a refusal
}

TEST_F(CliMessages, SizesTakeTheUnitsTheErrorLists) {
  const auto reserved_at = [&](const std::string& capacity) {
    const testing::CliRun run =
        testing::run_memreplay("replay " + trace_ + " --policy pytorch --capacity " + capacity + " --json -", dir_);
    EXPECT_EQ(run.status, 0) << capacity << run.err;
    return nlohmann::json::parse(run.out)["reserved_peak"];
  };
  EXPECT_EQ(reserved_at("24G"), reserved_at("24GiB"));  // K, M, G, T are the binary units
  const testing::CliRun bad = testing::run_memreplay("replay " + trace_ + " --policy pytorch --capacity 24X", dir_);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("KiB, MiB, GiB, TiB"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("KB, MB, GB, TB"), std::string::npos) << bad.err;
}

TEST_F(CliMessages, RecordingAProgramThatCannotStartWritesNoTrace) {
  // Any existing file passes for the interposer: nothing is preloaded into a program that never runs.
  const testing::CliRun run = testing::run_memreplay(
      "record --interposer " + std::string(MEMREPLAY_RECORD_LIB) + " -o " + path("x.mrt") + " -- /no/such", dir_);
  EXPECT_EQ(run.status, 127);
  EXPECT_EQ(run.err, "memreplay record: cannot run /no/such: No such file or directory; no trace written\n");
  EXPECT_FALSE(fs::exists(path("x.mrt")));
}

TEST_F(CliMessages, InfoShowsTheRecordedReservedPeakSettingsAndGpu) {
  const std::string t = path("t.mrt");
  {
    TraceWriter writer(t);
    proto::TraceHeader header;
    (*header.mutable_allocator_settings())["expandable_segments"] = "True";
    auto* device = header.add_devices();
    device->set_name("NVIDIA H200");
    device->set_total_memory(uint64_t{140} << 30);
    writer.begin(header);
    writer.append(Event{.kind = EventKind::segment_alloc, .time_ns = 1, .address = 1 << 24, .size = 4 << 20});
    writer.append(Event{.kind = EventKind::segment_alloc, .time_ns = 2, .address = 1 << 26, .size = 2 << 20});
    writer.append(Event{.kind = EventKind::segment_free, .time_ns = 3, .address = 1 << 24, .size = 4 << 20});
    writer.finish();
  }
  const testing::CliRun run = testing::run_memreplay("info " + t, dir_);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("device 0 (NVIDIA H200, 140.00 GiB)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("recorded with allocator settings expandable_segments:True"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("recorded reserved peak: 6.00 MiB (6291456 bytes"), std::string::npos) << run.out;
  const auto json = nlohmann::json::parse(testing::run_memreplay("info " + t + " --json -", dir_).out);
  EXPECT_EQ(json["devices"][0]["peak_reserved_bytes"], 6u << 20);
  // Without segment events there is no recorded reserved peak (null, not 0).
  const auto rmm = nlohmann::json::parse(testing::run_memreplay("info " + trace_ + " --json -", dir_).out);
  EXPECT_FALSE(rmm["devices"][0]["peak_reserved_bytes"].is_null());
  // Segments and no allocation: what a suballocating framework shows the interposer.
  EXPECT_NE(run.out.find("no allocation of the program: only the segments"), std::string::npos) << run.out;
  EXPECT_EQ(json["devices"][0]["allocations_visible"], false);
  EXPECT_EQ(rmm["devices"][0]["allocations_visible"], true);
  EXPECT_EQ(testing::run_memreplay("info " + trace_, dir_).out.find("no allocation of the program"), std::string::npos);
}

TEST_F(CliMessages, BoundSaysWhatItWrote) {
  const testing::CliRun run = testing::run_memreplay("bound " + trace_ + " --minimalloc " + path("l.csv"), dir_);
  ASSERT_EQ(run.status, 0) << run.err;
  const size_t rows = lines_of(testing::slurp(path("l.csv"))) - 1;
  EXPECT_NE(run.out.find("lifetimes of " + std::to_string(rows) + " blocks written to " + path("l.csv")),
            std::string::npos)
      << run.out;
  const auto json = nlohmann::json::parse(
      testing::run_memreplay("bound " + trace_ + " --minimalloc " + path("l.csv") + " --json -", dir_).out);
  EXPECT_EQ(json["minimalloc"]["path"], path("l.csv"));
  EXPECT_EQ(json["minimalloc"]["blocks"], rows);
}

TEST_F(CliMessages, ExportTakesJson) {
  const testing::CliRun run =
      testing::run_memreplay("export " + trace_ + " --to memory-viz -o " + path("s.pickle") + " --json -", dir_);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto json = nlohmann::json::parse(run.out);
  EXPECT_EQ(json["output"], path("s.pickle"));
  EXPECT_EQ(json["bytes"], fs::file_size(path("s.pickle")));
  EXPECT_GT(json["entries"].get<uint64_t>(), 0u);
  const auto perfetto = nlohmann::json::parse(
      testing::run_memreplay("export " + trace_ + " --to perfetto -o " + path("p.json") + " --json -", dir_).out);
  EXPECT_EQ(perfetto["bytes"], fs::file_size(path("p.json")));
  EXPECT_EQ(perfetto["policies"], nlohmann::json::array({"pytorch"}));
}

// Collects what an import produces.
struct CollectingSink : TraceSink {
  std::vector<Event> events;
  void begin(const proto::TraceHeader&) override {}
  uint32_t intern_stack(std::span<const FrameText>) override { return 0; }
  void append(const Event& e) override { events.push_back(e); }
  void append_annotation(const Event& e, const KeyValues&) override { events.push_back(e); }
  void finish() override {}
};

TEST_F(CliMessages, AnExportedStreamImportsBack) {
  // PyTorch's stream -1 is kept as 2^64 - 1: the export must write it as -1 again.
  const std::string t = path("t.mrt");
  {
    TraceWriter writer(t);
    writer.begin(proto::TraceHeader());
    writer.append(Event{
        .kind = EventKind::segment_alloc, .time_ns = 1, .stream = UINT64_MAX, .address = 1 << 24, .size = 2 << 20});
    writer.append(Event{.kind = EventKind::alloc, .time_ns = 2, .stream = UINT64_MAX, .address = 1 << 24, .size = 512});
    writer.finish();
  }
  const auto exported = results::export_memory_viz(t, 0, "pytorch");
  CollectingSink sink;
  ASSERT_NO_THROW(import_file_content(exported.pickle, "exported.pickle", sink));
  bool saw_alloc = false;
  for (const Event& e : sink.events)
    if (e.kind == EventKind::alloc) {
      saw_alloc = true;
      EXPECT_EQ(e.stream, UINT64_MAX);
    }
  EXPECT_TRUE(saw_alloc);
}

}  // namespace
}  // namespace memreplay
