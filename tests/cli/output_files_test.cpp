// Every file the CLI writes goes through base/output_file.h; this checks each writer from the
// outside: killed at several moments (SIGINT, SIGTERM, SIGKILL), on a full disk (a file size
// limit) and pointed at its own input, a device, a FIFO or a symlink. After any of it the previous
// output is intact (or the whole new one is there) and no temporary is left (after SIGKILL: once
// the next run has cleaned up).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

constexpr const char* kOld = "the previous output\n";

void put(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// One writer: the command (OUT stands for the output file), how to tell a whole output, and
// whether two runs write the same bytes.
struct Writer {
  std::string name;
  std::string command;
  std::string output;  // file name in the test's directory
  std::string whole_ends_with;  // a whole output ends so ("" : any non-empty output is whole)
  std::string old = kOld;  // what the output held before (a baseline must be one)
};

std::string replace_out(std::string command, const std::string& out) {
  for (size_t at = command.find("OUT"); at != std::string::npos; at = command.find("OUT", at + out.size()))
    command.replace(at, 3, out);
  return command;
}

// Starts the CLI with `arguments` (SIGINT at its default: a shell would start it ignored in the
// background), sends `signal` after `delay_ms` and waits for it to end.
void run_and_kill(const std::string& arguments, int signal, int delay_ms) {
  const pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGINT, SIG_DFL);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl("/bin/sh", "sh", "-c", ("exec " + std::string(MEMREPLAY_CLI) + " " + arguments).c_str(), nullptr);
    std::_Exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
  ::kill(child, signal);
  int status = 0;
  ::waitpid(child, &status, 0);
}

class OutputFiles : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    trace_ = testing::imported_trace("gpt2_generate.default");
    small_ = testing::imported_trace("multistream_pipeline.default");
    // A baseline of another policy: the update adds an entry to it.
    EXPECT_EQ(
        testing::run_memreplay("check " + small_ + " --policy bfc --update-baseline --baseline " + path("old.json"))
            .status,
        0);
    old_baseline_ = testing::slurp(path("old.json"));
    fs::remove(path("old.json"));
  }

  std::vector<Writer> writers() const {
    const std::string snapshot = testing::real_data_path("traces/gpt2_generate.default.pickle.xz").string();
    return {
        {"import", "import " + snapshot + " -o OUT", "out.mrt", ""},
        {"info --json", "info " + trace_ + " --json OUT", "out.json", "}\n"},
        {"report", "report " + small_ + " --policy pytorch -o OUT", "out.html", "</html>\n"},
        {"export memory-viz", "export " + trace_ + " --to memory-viz -o OUT", "out.pickle", "."},
        {"export perfetto", "export " + small_ + " --to perfetto -o OUT", "out.perfetto", ""},
        {"bound --minimalloc", "bound " + trace_ + " --minimalloc OUT", "out.csv", "\n"},
        {"check --junit", "check " + small_ + " --policy pytorch --max-overhead 100 --junit OUT", "out.xml",
         "</testsuites>\n"},
        {"check --markdown", "check " + small_ + " --policy pytorch --max-overhead 100 --markdown OUT", "out.md", "\n"},
        {"check --update-baseline", "check " + small_ + " --policy pytorch --update-baseline --baseline OUT",
         "out.base.json", "}\n", old_baseline_},
    };
  }

  // Everything in the directory but the writer's output and the runner's stderr file.
  std::vector<std::string> leftovers(const std::string& output) const {
    std::vector<std::string> extra;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name != output && name != "stderr.txt") extra.push_back(name);
    }
    return extra;
  }

  void expect_old_or_whole(const Writer& w, const std::string& context) const {
    const std::string got = testing::slurp(path(w.output));
    if (got == w.old) return;
    EXPECT_FALSE(got.empty()) << w.name << " " << context;
    EXPECT_TRUE(got.ends_with(w.whole_ends_with)) << w.name << " " << context << ": a partial output";
  }

  std::string trace_, small_, old_baseline_;
};

TEST_F(OutputFiles, EveryWriterWritesItsOutput) {
  for (const Writer& w : writers()) {
    put(path(w.output), w.old);
    const testing::CliRun run = testing::run_memreplay(replace_out(w.command, path(w.output)), dir_);
    ASSERT_EQ(run.status, 0) << w.name << "\n" << run.err;
    const std::string got = testing::slurp(path(w.output));
    EXPECT_NE(got, w.old) << w.name;
    EXPECT_TRUE(got.ends_with(w.whole_ends_with)) << w.name;
    EXPECT_EQ(leftovers(w.output), std::vector<std::string>{}) << w.name;
    fs::remove(path(w.output));
  }
}

TEST_F(OutputFiles, AFileSizeLimitIsAOneLineErrorAndTheOldOutputStays) {
  // `ulimit -f 0`: no file may grow by a byte, as on a full disk. stderr is the runner's pipe.
  for (const Writer& w : writers()) {
    put(path(w.output), w.old);
    const testing::CliRun run = testing::run_shell("sh -c 'ulimit -f 0; exec " + std::string(MEMREPLAY_CLI) + " " +
                                                   replace_out(w.command, path(w.output)) + "'");
    EXPECT_EQ(run.status, 2) << w.name << "\n" << run.out;
    // The error is the last line (info and check print their summary first).
    EXPECT_TRUE(run.out.ends_with("memreplay: " + path(w.output) + ": cannot write: File too large\n"))
        << w.name << "\n"
        << run.out;
    EXPECT_EQ(testing::slurp(path(w.output)), w.old) << w.name;
    EXPECT_EQ(leftovers(w.output), std::vector<std::string>{}) << w.name;
    fs::remove(path(w.output));
  }
}

TEST_F(OutputFiles, ADeviceThatIsFullIsAnErrorNotASuccess) {
  ASSERT_EQ(::mknod(path("full").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0) << "mknod needs root";
  const testing::CliRun run =
      testing::run_memreplay("check " + small_ + " --policy pytorch --max-overhead 100 --junit " + path("full"));
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.out.find("memreplay: " + path("full") + ": cannot write: No space left on device\n"), std::string::npos)
      << run.out;
  EXPECT_TRUE(fs::is_character_file(path("full")));
}

TEST_F(OutputFiles, KilledAtAnyMomentTheOldOutputOrTheWholeNewOneIsThere) {
  for (const Writer& w : writers()) {
    for (const int signal : {SIGINT, SIGTERM, SIGKILL}) {
      for (const int delay : {0, 50, 200}) {
        put(path(w.output), w.old);
        const std::string context = std::string(strsignal(signal)) + " after " + std::to_string(delay) + " ms";
        run_and_kill(replace_out(w.command, path(w.output)), signal, delay);
        expect_old_or_whole(w, context);
        if (signal != SIGKILL) EXPECT_EQ(leftovers(w.output), std::vector<std::string>{}) << w.name << " " << context;
      }
    }
    // Whatever SIGKILL left, the next run removes: it is the temporary of a process that is gone.
    const testing::CliRun run = testing::run_memreplay(replace_out(w.command, path(w.output)), dir_);
    ASSERT_EQ(run.status, 0) << w.name << "\n" << run.err;
    EXPECT_EQ(leftovers(w.output), std::vector<std::string>{}) << w.name << " after the next run";
    fs::remove(path(w.output));
  }
}

TEST_F(OutputFiles, AnOutputThatIsAnInputIsRefused) {
  const std::string snapshot = path("snap.pickle.xz");
  fs::copy_file(testing::real_data_path("traces/multistream_pipeline.default.pickle.xz"), snapshot);
  fs::copy_file(small_, path("s.mrt"));
  fs::create_symlink("s.mrt", path("other-name.html"));
  const std::string trace_bytes = testing::slurp(path("s.mrt"));
  const std::string snapshot_bytes = testing::slurp(snapshot);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"report " + path("s.mrt") + " -o " + path("s.mrt"), path("s.mrt")},
      {"report " + path("s.mrt") + " -o " + path("other-name.html"), path("other-name.html")},
      {"import " + snapshot + " -o " + snapshot, snapshot},
      {"info " + path("s.mrt") + " --json=" + path("s.mrt"), path("s.mrt")},
      {"export " + path("s.mrt") + " --to perfetto -o " + path("s.mrt"), path("s.mrt")},
      {"bound " + path("s.mrt") + " --minimalloc " + path("s.mrt"), path("s.mrt")},
      {"check " + path("s.mrt") + " --policy pytorch --max-overhead 100 --junit " + path("s.mrt"), path("s.mrt")},
  };
  for (const auto& [command, output] : cases) {
    const testing::CliRun run = testing::run_memreplay(command, dir_);
    EXPECT_EQ(run.status, 2) << command;
    // check names both roles of the file; every other writer says it is an input.
    const std::string refusal = command.starts_with("check") ? output + ": given as TRACE and as --junit"
                                                             : output + ": is also an input of this command (";
    EXPECT_EQ(run.err.rfind("memreplay: " + refusal, 0), 0u) << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
  EXPECT_EQ(testing::slurp(path("s.mrt")), trace_bytes);
  EXPECT_EQ(testing::slurp(snapshot), snapshot_bytes);
}

TEST_F(OutputFiles, DevicesFifosAndSymlinksAreWrittenAsSuch) {
  ASSERT_EQ(::mknod(path("null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << "mknod needs root";
  ASSERT_EQ(::mkfifo(path("fifo.json").c_str(), 0600), 0);
  fs::create_symlink("real.xml", path("link.xml"));
  std::string from_fifo;
  std::thread reader([&] { from_fifo = testing::slurp(path("fifo.json")); });
  const testing::CliRun run =
      testing::run_memreplay("check " + small_ + " --policy pytorch --max-overhead 100 --junit " + path("null") +
                                 " --markdown " + path("link.xml") + " --json " + path("fifo.json"),
                             dir_);
  if (run.status != 0) ::close(::open(path("fifo.json").c_str(), O_WRONLY | O_NONBLOCK));  // let the reader go
  reader.join();
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(fs::is_character_file(path("null")));
  EXPECT_TRUE(fs::is_fifo(path("fifo.json")));
  EXPECT_TRUE(fs::is_symlink(path("link.xml")));
  EXPECT_NE(testing::slurp(path("real.xml")).find("memreplay check"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(from_fifo).contains("cases"), true) << from_fifo;
  // /dev/stdout is written in place too: the JSON arrives on stdout.
  const testing::CliRun to_stdout = testing::run_memreplay("info " + small_ + " --json=/dev/stdout", dir_);
  ASSERT_EQ(to_stdout.status, 0) << to_stdout.err;
  EXPECT_NE(to_stdout.out.find("\"complete\": true"), std::string::npos) << to_stdout.out;
}

TEST_F(OutputFiles, SixteenConcurrentChecksWriteOneJunitFile) {
  std::string script = "fails=0; pids=; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do " +
                       std::string(MEMREPLAY_CLI) + " check " + small_ +
                       " --policy pytorch --max-overhead 100 --junit " + path("j.xml") +
                       " >/dev/null 2>&1 & pids=\"$pids $!\"; done; for p in $pids; do wait $p || " +
                       "fails=$((fails+1)); done; echo fails=$fails";
  const testing::CliRun run = testing::run_shell("sh -c '" + script + "'");
  EXPECT_NE(run.out.find("fails=0"), std::string::npos) << run.out;
  EXPECT_TRUE(testing::slurp(path("j.xml")).ends_with("</testsuites>\n"));
  EXPECT_EQ(leftovers("j.xml"), std::vector<std::string>{});
}

TEST_F(OutputFiles, AUsersOwnTmpFileIsLeftAlone) {
  put(path("out.json.tmp"), "mine");
  ASSERT_EQ(testing::run_memreplay("info " + small_ + " --json " + path("out.json"), dir_).status, 0);
  EXPECT_EQ(testing::slurp(path("out.json.tmp")), "mine");
}

}  // namespace
}  // namespace memreplay
