// examples/ci: the workflow's steps (examples/ci/memory_check.sh) and the CTest helper
// (cmake/MemreplayCheck.cmake, through examples/ci/CMakeLists.txt) on the bundled trace and the
// committed baseline: they pass, then a regressed trace (tonight's run allocates more) fails, and
// an input that does not import still leaves its reports. The workflow runs as a nightly job does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "tests/support/check_fixture.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

int shell(const std::string& command) { return testing::run_shell(command).status; }

class CiExample : public testing::TempDirTest {
 protected:
  std::string example(const std::string& name) { return (testing::source_dir() / "examples/ci" / name).string(); }
  std::string steps(const std::string& input, const std::string& out) {
    return example("memory_check.sh") + " " + MEMREPLAY_CLI + " " + input + " " + example("memory-baseline.json") +
           " " + out + " >" + path("steps.log") + " 2>&1";
  }
  // The bundled run with every allocation 25% larger: a model that grew.
  std::string regressed_trace() {
    const std::string original = path("original.mrt"), grown = path("grown.mrt");
    {
      TraceWriter writer(original);
      import_file((testing::source_dir() / "traces/multistream_pipeline.default.pickle.xz").string(), writer);
    }
    return testing::grown_trace(original, grown);
  }
};

TEST_F(CiExample, WorkflowStepsPassOnTheBaselineAndFailOnARegressedTrace) {
  const std::string bundled = (testing::source_dir() / "traces/multistream_pipeline.default.pickle.xz").string();
  ASSERT_EQ(shell(steps(bundled, path("pass"))), 0) << testing::slurp(path("steps.log"));
  EXPECT_NE(testing::slurp(path("pass/memory-check.xml")).find("failures=\"0\""), std::string::npos);

  EXPECT_EQ(shell(steps(regressed_trace(), path("fail"))), 1) << testing::slurp(path("steps.log"));
  const std::string log = testing::slurp(path("steps.log"));
  EXPECT_NE(log.find("REGRESSION run pytorch: reserved_peak"), std::string::npos) << log;
  EXPECT_NE(testing::slurp(path("fail/memory-check.md")).find("FAILED"), std::string::npos);
  EXPECT_NE(testing::slurp(path("fail/memory-check.xml")).find("<failure"), std::string::npos);
}

TEST_F(CiExample, CTestHelperPassesThenFails) {
  const std::string bundled = (testing::source_dir() / "traces/multistream_pipeline.default.pickle.xz").string();
  const std::string run = path("run.mrt");
  {
    TraceWriter writer(run);
    import_file(bundled, writer);
  }
  const auto ctest_with = [&](const std::string& trace) {
    const std::string build = path("ci-build");
    fs::remove_all(build);
    const std::string configure = "cmake -S " + (testing::source_dir() / "examples/ci").string() + " -B " + build +
                                  " -DMEMREPLAY=" + MEMREPLAY_CLI + " -DRUN_TRACE=" + trace + " >" + path("cmake.log") +
                                  " 2>&1";
    if (shell(configure) != 0) return -1;
    return shell("ctest --test-dir " + build + " --output-on-failure >" + path("ctest.log") + " 2>&1");
  };
  EXPECT_EQ(ctest_with(run), 0) << testing::slurp(path("cmake.log")) << testing::slurp(path("ctest.log"));
  const std::string grown = regressed_trace(), renamed = path("tonight/run.mrt");
  fs::create_directories(path("tonight"));
  fs::copy_file(grown, renamed);
  EXPECT_NE(ctest_with(renamed), 0) << testing::slurp(path("ctest.log"));
  EXPECT_NE(testing::slurp(path("ctest.log")).find("REGRESSION run pytorch"), std::string::npos)
      << testing::slurp(path("ctest.log"));
}

TEST_F(CiExample, AnInputThatDoesNotImportStillLeavesItsReports) {
  const std::string garbage = path("snapshot.pickle");
  std::ofstream(garbage) << "not a snapshot";
  EXPECT_EQ(shell(steps(garbage, path("bad"))), 2) << testing::slurp(path("steps.log"));
  EXPECT_NE(testing::slurp(path("bad/memory-check.xml")).find("type=\"bad-input\""), std::string::npos);
  EXPECT_NE(testing::slurp(path("bad/memory-check.md")).find("ERROR (bad input)"), std::string::npos);
}

TEST_F(CiExample, TheWorkflowRunsNightlyAndOnPullRequestsFromItsOwnArtifact) {
  const std::string workflow = testing::read_bytes(example("github-workflow.yml"));
  for (const char* needed :
       {"pull_request:", "schedule:", "cron:", "actions/upload-artifact@v4", "actions/download-artifact@v4",
        "actions/cache@v4", "hashFiles(", "cache-hit != 'true'", "examples/ci/memory_check.sh", "if: always()"})
    EXPECT_NE(workflow.find(needed), std::string::npos) << needed;
}

}  // namespace
}  // namespace memreplay
