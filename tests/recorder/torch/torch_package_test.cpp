// The copies of the trace format outside proto/ that no build-time check reaches: the names of
// recorder/live/memreplay_record_loader.h's kinds, and the Python package's numbers
// (tests/python/test_torch_format.py, run here against the libmemreplay_record.so of this build).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "proto/event.h"
#include "recorder/live/memreplay_record_loader.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

TEST(RecordLibraryLoader, KindNamesAreThoseOfTheEventVocabulary) {
  for (const auto& [name, number] : memreplay_record_library::kinds) {
    SCOPED_TRACE(name);
    const auto kind = event_kind_from_name(name);
    ASSERT_TRUE(kind.has_value());
    EXPECT_EQ(static_cast<int>(*kind), number);
  }
}

TEST(RecordLibraryLoader, LoadsTheLibraryOfThisBuildAndRefusesOthers) {
  memreplay_record_library api;
  EXPECT_EQ(api.load(MEMREPLAY_RECORD_LIB), "");
  EXPECT_NE(api.record, nullptr);

  memreplay_record_library old;
  const std::string error = old.load("libz.so.1");  // a library without the C API
  EXPECT_NE(error.find("libz.so.1 lacks memreplay_open"), std::string::npos) << error;
  EXPECT_EQ(old.open, nullptr);
  EXPECT_NE(old.load("/no/such/libmemreplay_record.so").find("cannot load"), std::string::npos);
}

TEST(TorchPackage, HoldsItsFormatNumbersAgainstTheLibrary) {
  if (std::system("python3 -c '' 2>/dev/null") != 0) GTEST_SKIP() << "no python3";
  const fs::path source = testing::source_dir();
  const std::string command = "cd '" + source.string() + "' && PYTHONPATH='" + (source / "python").string() +
                              "' MEMREPLAY_RECORD_LIB='" + MEMREPLAY_RECORD_LIB +
                              "' python3 -m unittest discover -s tests/python -p 'test_torch_format.py'";
  const testing::CliRun run = testing::run_shell(command);
  EXPECT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("OK"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace memreplay
