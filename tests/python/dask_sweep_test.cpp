// memreplay.dask on a real Dask cluster (tests/python/dask/test_sweep.py, pytest under Debian's
// python3 with python3-distributed): a scheduler and two worker processes give the lines of
// `memreplay sweep` task for task, also with a worker killed mid-sweep.
#include <gtest/gtest.h>

#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

TEST(DaskSweep, LinesEqualTheCliSweepAlsoWithAWorkerKilled) {
  const auto source = testing::source_dir();
  const std::string command = "cd '" + source.string() + "' && MEMREPLAY_CLI='" + MEMREPLAY_CLI +
                              "' MEMREPLAY_REAL_DATA_DIR='" + testing::real_data_dir().string() + "' PYTHONPATH='" +
                              (source / "python").string() +
                              "' /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python/dask";
  const auto run = testing::run_shell(command);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("5 passed"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace memreplay
