#include "tests/support/test_support.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <stdexcept>

#include "proto/trace_writer.h"
#include "recorder/import/import.h"

namespace memreplay::testing {

namespace fs = std::filesystem;

fs::path real_data_dir() {
  if (const char* dir = std::getenv("MEMREPLAY_REAL_DATA_DIR"); dir != nullptr && *dir != '\0') return dir;
  return MEMREPLAY_REAL_DATA_DIR;
}

fs::path real_data_path(const fs::path& relative) {
  const fs::path path = real_data_dir() / relative;
  if (!fs::exists(path))
    throw std::runtime_error("missing test data: " + path.string() +
                             " (the real traces and ground truth; set MEMREPLAY_REAL_DATA_DIR to where they are)");
  return path;
}

std::vector<std::string> real_data_names(const fs::path& relative, const std::string& suffix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(real_data_dir() / relative, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > suffix.size() && file.ends_with(suffix))
      names.push_back(file.substr(0, file.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string imported_file(const fs::path& source) {
  static std::mutex mutex;
  static std::map<fs::path, std::string> imported;
  std::lock_guard lock(mutex);
  if (const auto it = imported.find(source); it != imported.end()) return it->second;
  if (!fs::exists(source)) throw std::runtime_error("no such file: " + source.string());
  // DIR/FOLDER/NAME.mrt: named as the input (check's baselines key by it), one folder per input
  // folder so that names in two folders cannot clash.
  const auto dir =
      fs::temp_directory_path() / ("memreplay-test-" + std::to_string(getpid())) / source.parent_path().filename();
  fs::create_directories(dir);
  const std::string name = source.filename().string();
  const std::string output = (dir / (name.substr(0, name.find(".pickle")) + ".mrt")).string();
  TraceWriter writer(output);
  import_file(source.string(), writer);
  return imported[source] = output;
}

std::string imported_trace(const std::string& name) {
  return imported_file(real_data_path(fs::path("traces") / (name + ".pickle.xz")));
}

void TempDir::make_dir(const std::string& prefix) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name =
      prefix + std::string(info->test_suite_name()) + "_" + std::to_string(::getpid()) + "_" + info->name();
  std::replace(name.begin(), name.end(), '/', '_');  // parameterised tests' names have slashes
  dir_ = fs::temp_directory_path() / name;
  fs::remove_all(dir_);
  fs::create_directories(dir_);
}

void TempDir::remove_dir() { fs::remove_all(dir_); }

}  // namespace memreplay::testing
