// Helpers shared by tests: where the real data is (and a loud failure when it is not there), a
// fresh directory per test, importing a real trace once per test binary.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace memreplay::testing {

// The real traces and ground truth: $MEMREPLAY_REAL_DATA_DIR when set (an empty folder there shows
// what every test that needs the data says without it), else tests/data/real in the checkout.
std::filesystem::path real_data_dir();
inline std::filesystem::path source_dir() { return MEMREPLAY_SOURCE_DIR; }

// real_data_dir() / relative; throws std::runtime_error naming the full path when it does not exist,
// so a test without its data fails (and says where it looked) instead of passing on nothing.
std::filesystem::path real_data_path(const std::filesystem::path& relative);
// The names (without `suffix`) of the files in real_data_dir() / relative ending in `suffix`,
// sorted; empty when the folder is missing (for a test parameter list, which must not throw:
// pair it with a TEST that calls real_data_path() and checks the count).
std::vector<std::string> real_data_names(const std::filesystem::path& relative, const std::string& suffix);

nlohmann::json read_json(const std::filesystem::path& path);
// The whole file; throws std::runtime_error naming it when it cannot be read.
std::string read_bytes(const std::filesystem::path& path);

// Imports a snapshot (or any input `memreplay import` reads) into a .mrt in a temporary directory,
// once per process, and returns the trace's path; throws naming the file when it is missing.
std::string imported_file(const std::filesystem::path& source);
// imported_file(real_data_dir()/traces/NAME.pickle.xz).
std::string imported_trace(const std::string& name);

// The message of the E that f() throws; "" when it throws nothing.
template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

// A fresh, empty directory per test, named after the suite, the test and this process, removed
// afterwards. TempDir is the mixin for fixtures with a base of their own (TestWithParam);
// TempDirTest the plain fixture.
class TempDir {
 protected:
  void make_dir(const std::string& prefix = "memreplay_");
  void remove_dir();
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

class TempDirTest : public ::testing::Test, protected TempDir {
 protected:
  void SetUp() override { make_dir(); }
  void TearDown() override { remove_dir(); }
};

}  // namespace memreplay::testing
