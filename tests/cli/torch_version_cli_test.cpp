// The torch version end to end: every trace command warns once on stderr when the trace's torch
// release is not the one the policy models, replay's JSON and `memreplay policies` say which one
// the policy models.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "proto/trace_writer.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

fs::path scratch_dir() {
  const auto dir = fs::temp_directory_path() / ("memreplay-torch-version-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  return dir;
}

// A small trace recorded (its header says) under torch `version`; "" leaves the setting out.
std::string trace_from_torch(const std::string& version) {
  const auto path = scratch_dir() / ("torch-" + (version.empty() ? std::string("none") : version) + ".mrt");
  TraceWriter writer(path.string());
  proto::TraceHeader header;
  header.set_source("pytorch-live");
  if (!version.empty()) (*header.mutable_allocator_settings())["torch_version"] = version;
  writer.begin(header);
  writer.append(Event{.kind = EventKind::alloc, .time_ns = 1, .address = 0x1000, .size = 3 << 20});
  writer.append(Event{.kind = EventKind::alloc, .time_ns = 2, .address = 0x400000, .size = 4096});
  writer.append(Event{.kind = EventKind::free_completed, .time_ns = 3, .address = 0x1000});
  writer.finish();
  return path.string();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

constexpr const char* kWarning = "was recorded with torch 2.13.0+cu128, but policy 'pytorch' models PyTorch 2.11";

TEST(TorchVersionCli, ReplayWarnsOnceAndItsJsonNamesTheModelledRelease) {
  const std::string trace = trace_from_torch("2.13.0+cu128");
  const auto r = testing::run_memreplay("replay " + trace + " --policy pytorch --json -", scratch_dir());
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(count(r.err, kWarning), 1u) << r.err;
  EXPECT_NE(r.err.find("memreplay: warning: " + trace + ": the trace was recorded"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["models_torch_version"], "2.11");

  const auto bfc = testing::run_memreplay("replay " + trace + " --policy bfc --json -", scratch_dir());
  ASSERT_EQ(bfc.status, 0) << bfc.err;
  EXPECT_EQ(bfc.err.find("recorded with torch"), std::string::npos) << bfc.err;  // bfc models no release
  EXPECT_TRUE(nlohmann::json::parse(bfc.out)["models_torch_version"].is_null());
}

TEST(TorchVersionCli, EveryTraceCommandWarnsOncePerTrace) {
  const std::string trace = trace_from_torch("2.13.0+cu128");
  const auto dir = scratch_dir();
  const std::string policies = " --policy pytorch --policy pytorch:expandable_segments:True";
  for (const std::string& command :
       {"compare " + trace + policies + " --json -", "fit " + trace + " --policy pytorch --json -",
        "advise " + trace + " --policy pytorch --no-fit --json -",
        "report " + trace + policies + " -o " + (dir / "report.html").string(),
        "check " + trace + policies + " --update-baseline --baseline " + (dir / "baseline.json").string()}) {
    const auto r = testing::run_memreplay(command, dir);
    EXPECT_EQ(r.status, 0) << command << "\n" << r.out << r.err;
    EXPECT_EQ(count(r.err, kWarning), 1u) << command << "\n" << r.err;
  }
}

TEST(TorchVersionCli, TheSameReleaseOrNoneRecordedSaysNothing) {
  for (const std::string& version : {"2.11.0+cu130", ""}) {
    const auto r = testing::run_memreplay("replay " + trace_from_torch(version) + " --policy pytorch", scratch_dir());
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("recorded with torch"), std::string::npos) << version << ": " << r.err;
  }
}

// A snapshot pickle names no release; the user can, at import.
TEST(TorchVersionCli, ImportRecordsTheReleaseTheUserNames) {
  const auto dir = scratch_dir();
  const std::string snapshot = (testing::source_dir() / "traces" / "multistream_pipeline.default.pickle.xz").string();
  const std::string trace = (dir / "imported-2.13.mrt").string();
  auto r = testing::run_memreplay("import " + snapshot + " -o " + trace + " --torch-version 2.13.0+cu128", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  r = testing::run_memreplay("replay " + trace + " --policy pytorch", dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count(r.err, kWarning), 1u) << r.err;

  const std::string plain = (dir / "imported.mrt").string();
  ASSERT_EQ(testing::run_memreplay("import " + snapshot + " -o " + plain, dir).status, 0);
  r = testing::run_memreplay("replay " + plain + " --policy pytorch", dir);
  EXPECT_EQ(r.err.find("recorded with torch"), std::string::npos) << r.err;

  r = testing::run_memreplay("import " + snapshot + " -o " + plain + " --torch-version latest", dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("--torch-version latest: not a torch release"), std::string::npos) << r.err;
}

TEST(TorchVersionCli, PoliciesNameTheReleaseTheyModel) {
  const auto r = testing::run_memreplay("policies --json -", scratch_dir());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto listed = nlohmann::json::parse(r.out);  // named: a loop over a temporary's member dangles
  for (const auto& p : listed["policies"]) {
    if (p["name"] == "pytorch") EXPECT_EQ(p["models_torch_version"], "2.11");
    if (p["name"] == "bfc") EXPECT_TRUE(p["models_torch_version"].is_null());
  }
  const auto text = testing::run_memreplay("policies", scratch_dir());
  EXPECT_NE(text.out.find("models PyTorch 2.11; other releases may decide otherwise, and no ground truth of theirs"),
            std::string::npos)
      << text.out;
}

}  // namespace
}  // namespace memreplay
