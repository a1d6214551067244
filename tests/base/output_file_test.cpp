// base/output_file.h: whole or not at all, devices and FIFOs written as such, symlinks followed,
// unique temporaries, checked writes, inputs never overwritten, and no temporary left behind by
// an error, a signal, or (after the next run) a SIGKILL.
#include "base/output_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "base/input_error.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

void put(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Every entry of `dir` but those named in `expected`: what a writer left behind.
std::vector<std::string> leftovers(const fs::path& dir, const std::vector<std::string>& expected) {
  std::vector<std::string> extra;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (std::find(expected.begin(), expected.end(), name) == expected.end()) extra.push_back(name);
  }
  return extra;
}

class OutputFileTest : public testing::TempDirTest {
 protected:
  void TearDown() override {
    clear_protected_inputs();
    TempDirTest::TearDown();
  }
};

TEST_F(OutputFileTest, ReplacesAFileWholeKeepingItsMode) {
  put(path("out.json"), "old");
  fs::permissions(path("out.json"), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  write_output_file(path("out.json"), "new contents\n");
  EXPECT_EQ(testing::slurp(path("out.json")), "new contents\n");
  EXPECT_EQ(fs::status(path("out.json")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_EQ(leftovers(dir_, {"out.json"}), std::vector<std::string>{});
}

TEST_F(OutputFileTest, ANewFileGetsTheUmaskMode) {
  const mode_t old = ::umask(027);
  write_output_file(path("new.txt"), "x");
  ::umask(old);
  EXPECT_EQ(fs::status(path("new.txt")).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST_F(OutputFileTest, WithoutCommitTheTargetKeepsWhatItHeldAndNoTemporaryStays) {
  put(path("out.html"), "previous");
  {
    OutputFile out(path("out.html"));
    out.write("half of a page");
    EXPECT_TRUE(fs::exists(out.temporary()));
    EXPECT_EQ(temporary_owner(fs::path(out.temporary()).filename().string(), "out.html"), ::getpid());
  }
  EXPECT_EQ(testing::slurp(path("out.html")), "previous");
  EXPECT_EQ(leftovers(dir_, {"out.html"}), std::vector<std::string>{});
}

TEST_F(OutputFileTest, ASymlinkStaysALinkAndItsTargetIsReplaced) {
  fs::create_directory(path("real"));
  put(path("real/report.html"), "old");
  fs::create_symlink("real/report.html", path("link.html"));
  write_output_file(path("link.html"), "new");
  EXPECT_TRUE(fs::is_symlink(path("link.html")));
  EXPECT_EQ(testing::slurp(path("real/report.html")), "new");
  // A dangling link names the file to create.
  fs::create_symlink("real/created.txt", path("dangling"));
  write_output_file(path("dangling"), "made");
  EXPECT_TRUE(fs::is_symlink(path("dangling")));
  EXPECT_EQ(testing::slurp(path("real/created.txt")), "made");
  EXPECT_EQ(leftovers(dir_ / "real", {"report.html", "created.txt"}), std::vector<std::string>{});
}

TEST_F(OutputFileTest, AFifoIsWrittenAsAFifo) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = testing::slurp(path("pipe")); });
  write_output_file(path("pipe"), "through the pipe");
  reader.join();
  EXPECT_EQ(received, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(path("pipe")));
  EXPECT_EQ(leftovers(dir_, {"pipe"}), std::vector<std::string>{});
}

TEST_F(OutputFileTest, ADeviceNodeIsWrittenAsADevice) {
  // A null device of our own (root may make one): the machine's /dev/null is never at stake.
  ASSERT_EQ(::mknod(path("null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << "mknod needs root";
  fs::create_symlink(path("null"), path("null-link"));
  write_output_file(path("null"), "discarded");
  write_output_file(path("null-link"), "discarded too");
  EXPECT_TRUE(fs::is_character_file(path("null")));
  EXPECT_TRUE(fs::is_symlink(path("null-link")));
  EXPECT_EQ(leftovers(dir_, {"null", "null-link"}), std::vector<std::string>{});
}

TEST_F(OutputFileTest, ADeviceThatIsFullIsAWriteError) {
  ASSERT_EQ(::mknod(path("full").c_str(), S_IFCHR | 0666, makedev(1, 7)), 0) << "mknod needs root";
  const std::string error = testing::error_of<InputError>([&] { write_output_file(path("full"), "bytes"); });
  EXPECT_EQ(error, path("full") + ": cannot write: No space left on device");
  EXPECT_TRUE(fs::is_character_file(path("full")));
}

TEST_F(OutputFileTest, ADirectoryIsRefused) {
  fs::create_directory(path("d"));
  EXPECT_EQ(testing::error_of<InputError>([&] { write_output_file(path("d"), "x"); }),
            path("d") + ": is a directory, not a file to write");
}

TEST_F(OutputFileTest, AUsersOwnTmpFileIsNeverTouched) {
  put(path("check.xml.tmp"), "mine");
  put(path("check.xml.tmp." + std::to_string(::getpid())), "mine too");
  write_output_file(path("check.xml"), "<xml/>");
  EXPECT_EQ(testing::slurp(path("check.xml.tmp")), "mine");
  EXPECT_EQ(testing::slurp(path("check.xml.tmp." + std::to_string(::getpid()))), "mine too");
}

TEST_F(OutputFileTest, SixteenConcurrentWritersOfOneTargetAllSucceed) {
  const std::string target = path("junit.xml");
  std::vector<std::string> contents;
  for (int i = 0; i < 16; ++i) contents.push_back(std::string(100'000 + i, static_cast<char>('a' + i)));
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int i = 0; i < 16; ++i)
    writers.emplace_back([&, i] {
      try {
        write_output_file(target, contents[static_cast<size_t>(i)]);
      } catch (const InputError&) {
        ++failures;
      }
    });
  for (auto& w : writers) w.join();
  EXPECT_EQ(failures, 0);
  const std::string result = testing::slurp(target);
  EXPECT_NE(std::find(contents.begin(), contents.end(), result), contents.end()) << "a mix of writers";
  EXPECT_EQ(leftovers(dir_, {"junit.xml"}), std::vector<std::string>{});
}

TEST_F(OutputFileTest, AnInputIsNeverOverwrittenUnderAnyName) {
  put(path("s.mrt"), "the trace");
  protect_input(path("s.mrt"));
  fs::create_hard_link(path("s.mrt"), path("hard.mrt"));
  fs::create_symlink("s.mrt", path("soft.mrt"));
  for (const std::string name : {"s.mrt", "hard.mrt", "soft.mrt"}) {
    const std::string error = testing::error_of<InputError>([&] { write_output_file(path(name), "<html>"); });
    EXPECT_EQ(error, path(name) + ": is also an input of this command (" + path("s.mrt") +
                         "); refusing to overwrite it (write the output to another file)");
  }
  EXPECT_EQ(testing::slurp(path("s.mrt")), "the trace");
  write_output_file(path("other.html"), "<html>");  // any other file is fine
}

TEST_F(OutputFileTest, AFileSizeLimitIsAnErrorAndLeavesTheOldFile) {
  put(path("base.json"), "the old baseline");
  const pid_t child = ::fork();
  if (child == 0) {
    const rlimit limit{100, 100};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const std::string error =
        testing::error_of<InputError>([&] { write_output_file(path("base.json"), std::string(1000, 'x')); });
    std::_Exit(error == path("base.json") + ": cannot write: File too large" ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(testing::slurp(path("base.json")), "the old baseline");
  EXPECT_EQ(leftovers(dir_, {"base.json"}), std::vector<std::string>{});
}

TEST_F(OutputFileTest, SigintSigtermAndSighupRemoveTheTemporary) {
  put(path("out.csv"), "old");
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    EXPECT_EXIT(
        {
          OutputFile out(path("out.csv"));
          out.write("part");
          if (!fs::exists(out.temporary())) std::_Exit(3);
          ::raise(signal);
        },
        ::testing::KilledBySignal(signal), "");
    EXPECT_EQ(testing::slurp(path("out.csv")), "old");
    EXPECT_EQ(leftovers(dir_, {"out.csv"}), std::vector<std::string>{});
  }
}

TEST_F(OutputFileTest, TheNextWriterRemovesTemporariesOfKilledProcesses) {
  put(path("out.mrt"), "old");
  const pid_t child = ::fork();
  if (child == 0) {
    OutputFile out(path("out.mrt"));
    out.write("part");
    ::kill(::getpid(), SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(leftovers(dir_, {"out.mrt"}).size(), 1u) << "SIGKILL leaves the temporary";
  // A live process's temporary (pid 1 is alive) and other targets' temporaries stay.
  put(path(".out.mrt.memreplay-tmp.1.abcdef"), "live");
  put(path(".other.mrt.memreplay-tmp." + std::to_string(child) + ".abcdef"), "another target's");
  write_output_file(path("out.mrt"), "new");
  EXPECT_EQ(testing::slurp(path("out.mrt")), "new");
  std::vector<std::string> left = leftovers(dir_, {"out.mrt"});
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{".other.mrt.memreplay-tmp." + std::to_string(child) + ".abcdef",
                                            ".out.mrt.memreplay-tmp.1.abcdef"}));
}

TEST(TemporaryNames, OnlyTheirOwnPatternIsATemporary) {
  EXPECT_EQ(temporary_owner(".a.json.memreplay-tmp.123.Ab9xYz", "a.json"), 123);
  EXPECT_EQ(temporary_owner(".a.json.memreplay-tmp.123.Ab9xYz", "b.json"), std::nullopt);
  EXPECT_EQ(temporary_owner(".a.json.memreplay-tmp.12x.Ab9xYz", "a.json"), std::nullopt);
  EXPECT_EQ(temporary_owner(".a.json.memreplay-tmp.123.short", "a.json"), std::nullopt);
  EXPECT_EQ(temporary_owner("a.json.tmp", "a.json"), std::nullopt);
  EXPECT_EQ(temporary_owner(".a.json.memreplay-tmp..Ab9xYz", "a.json"), std::nullopt);
}

}  // namespace
}  // namespace memreplay
