// Every trace command takes a PyTorch snapshot (.pickle, .pickle.xz, .gz, .zst; told by the
// content) where it takes a .mrt, and says exactly what it says for the imported trace. Inputs
// that are not regular files are refused at once, and a large file that is none of ours is
// refused without being read whole.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "recorder/import/input/decompress.h"
#include "results/open_trace.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

void put(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class SnapshotAsTrace : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    xz_ = testing::real_data_path("traces/gpt2_train.default.pickle.xz").string();
    mrt_ = testing::imported_trace("gpt2_train.default");
  }
  // The JSON a command prints, with the trace's own path (which differs) taken out.
  // `command` names the trace TRACE.
  nlohmann::json json_of(std::string command, const std::string& trace) {
    command.replace(command.find("TRACE"), 5, trace);
    const testing::CliRun run = testing::run_memreplay(command + " --json -", dir_);
    EXPECT_EQ(run.status, 0) << command << " " << trace << "\n" << run.err;
    nlohmann::json j = nlohmann::json::parse(run.out);
    j.erase("trace");
    without_timings(j);
    return j;
  }
  // Drops what differs from run to run: wall times.
  static void without_timings(nlohmann::json& j) {
    if (j.is_array())
      for (auto& item : j) without_timings(item);
    if (!j.is_object()) return;
    for (auto it = j.begin(); it != j.end();) {
      if (it.key().ends_with("seconds") || it.key() == "latency") {
        it = j.erase(it);
      } else {
        without_timings(it.value());
        ++it;
      }
    }
  }
  std::string xz_, mrt_;
};

TEST_F(SnapshotAsTrace, EveryCommandSaysWhatItSaysForTheImportedTrace) {
  for (const std::string command :
       {"info TRACE", "validate TRACE", "replay TRACE --policy pytorch", "compare TRACE --policy pytorch --policy bfc",
        "fit TRACE --policy pytorch --grid 4 --resolution 64MiB", "advise TRACE --no-fit", "bound TRACE"}) {
    nlohmann::json from_snapshot = json_of(command, xz_), from_trace = json_of(command, mrt_);
    EXPECT_EQ(nlohmann::json::diff(from_snapshot, from_trace), nlohmann::json::array()) << command;
  }
}

TEST_F(SnapshotAsTrace, CheckReportAndExportTakeASnapshot) {
  const testing::CliRun check =
      testing::run_memreplay("check " + xz_ + " --policy pytorch --update-baseline --baseline " + path("b.json"), dir_);
  ASSERT_EQ(check.status, 0) << check.err;
  // The baseline is keyed by name (gpt2_train.default.pickle.xz vs gpt2_train.default): compare numbers.
  const auto baseline = testing::read_json(path("b.json"));
  const auto metrics =
      nlohmann::json::parse(testing::run_memreplay("replay " + mrt_ + " --policy pytorch --json -").out);
  EXPECT_EQ(baseline["entries"][0]["metrics"]["reserved_peak"], metrics["reserved_peak"]);
  for (const std::string command : {"report " + xz_ + " --policy pytorch -o " + path("r.html"),
                                    "export " + xz_ + " --to memory-viz -o " + path("e.pickle"),
                                    "export " + xz_ + " --to perfetto -o " + path("e.json")}) {
    const testing::CliRun run = testing::run_memreplay(command, dir_);
    EXPECT_EQ(run.status, 0) << command << "\n" << run.err;
  }
  // The same export, read back (the bytes may intern strings in another order).
  ASSERT_EQ(testing::run_memreplay("export " + mrt_ + " --to memory-viz -o " + path("m.pickle"), dir_).status, 0);
  nlohmann::json from_snapshot = json_of("info TRACE", path("e.pickle")),
                 from_trace = json_of("info TRACE", path("m.pickle"));
  from_snapshot.erase("source_file");
  from_trace.erase("source_file");
  EXPECT_EQ(nlohmann::json::diff(from_snapshot, from_trace), nlohmann::json::array());
}

TEST_F(SnapshotAsTrace, EveryCompressionAndThePlainPickle) {
  const std::string pickle = read_decompressed(xz_);
  put(path("s.pickle"), pickle);
  std::string zst(ZSTD_compressBound(pickle.size()), '\0');
  zst.resize(ZSTD_compress(zst.data(), zst.size(), pickle.data(), pickle.size(), 1));
  put(path("s.zst"), zst);
  gzFile gz = gzopen(path("s.gz").c_str(), "wb");
  gzwrite(gz, pickle.data(), static_cast<unsigned>(pickle.size()));
  gzclose(gz);
  const nlohmann::json expected = json_of("replay TRACE --policy pytorch", mrt_);
  for (const std::string name : {"s.pickle", "s.zst", "s.gz"})
    EXPECT_EQ(nlohmann::json::diff(json_of("replay TRACE --policy pytorch", path(name)), expected),
              nlohmann::json::array())
        << name;
}

TEST_F(SnapshotAsTrace, OpenTraceMakesThePathReadableAndForgetsItAfter) {
  {
    const results::OpenedTrace opened = results::open_trace(xz_);
    EXPECT_TRUE(opened.converted());
    TraceReader reader(opened.path());
    EXPECT_EQ(reader.path(), xz_);
    EXPECT_EQ(reader.footer()->total_events(), TraceReader(mrt_).footer()->total_events());
  }
  EXPECT_NE(testing::error_of<InputError>([&] { TraceReader reader(xz_); }).find("bad magic"), std::string::npos);
  EXPECT_FALSE(results::open_trace(mrt_).converted());
}

TEST_F(SnapshotAsTrace, WhatNoCommandReadsIsOneLineWithItsOffset) {
  put(path("notes.txt"), "neither a trace nor a snapshot\n");
  const testing::CliRun run = testing::run_memreplay("info " + path("notes.txt"), dir_);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(run.err, "memreplay: " + path("notes.txt") +
                         ": byte 0: not a memreplay trace (bad magic), nor a file `memreplay import` reads (a PyTorch "
                         "memory snapshot pickle, plain or .gz/.xz/.zst, or an RMM log)\n");
}

TEST_F(SnapshotAsTrace, AFifoIsRefusedAtOnceNotWaitedOn) {
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  for (const std::string command : {"info " + path("fifo"), "import " + path("fifo") + " -o " + path("x.mrt"),
                                    "replay " + path("fifo") + " --policy pytorch"}) {
    const testing::CliRun run = testing::run_shell("timeout 10 " + std::string(MEMREPLAY_CLI) + " " + command, dir_);
    EXPECT_EQ(run.status, 2) << command << " (124: it waited for a writer)";
    EXPECT_EQ(run.err,
              "memreplay: " + path("fifo") + ": a FIFO (pipe), not a regular file: inputs are read from files\n")
        << command;
  }
}

// Peak resident memory of the CLI run with `arguments` (through /bin/sh), and its exit status.
// Peak resident memory of the CLI run with `arguments`, and its exit status, through GNU time (a
// small process that forks the CLI: the maximum is the CLI's own).
std::pair<long, int> peak_resident_kib(const std::string& arguments, const fs::path& dir) {
  const testing::CliRun run =
      testing::run_shell("/usr/bin/time -f 'peak=%M' " + std::string(MEMREPLAY_CLI) + " " + arguments, dir);
  const size_t at = run.err.rfind("peak=");
  return {at == std::string::npos ? -1 : std::stol(run.err.substr(at + 5)), run.status};
}

TEST_F(SnapshotAsTrace, AGigabyteSparseFileIsNotScannedWhole) {
  {
    const int fd = ::open(path("sparse").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_EQ(::ftruncate(fd, off_t{1} << 30), 0);
    ::close(fd);
  }
  for (const std::string command : {"import " + path("sparse") + " -o " + path("x.mrt"), "info " + path("sparse")}) {
    const auto [kib, status] = peak_resident_kib(command, dir_);
    EXPECT_EQ(status, 2) << command;
    EXPECT_GT(kib, 0) << command;
    EXPECT_LT(kib, 100 * 1024) << command << ": " << kib << " KiB resident";
  }
}

}  // namespace
}  // namespace memreplay
