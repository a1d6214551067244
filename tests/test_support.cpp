#include "tests/test_support.h"

#include <fstream>
#include <map>
#include <mutex>
#include <unistd.h>

#include "recorder/import/import.h"
#include "recorder/import/trace_writer.h"

namespace memreplay::testing {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  return nlohmann::json::parse(in);
}

std::string imported_trace(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::string> imported;
  std::lock_guard lock(mutex);
  if (const auto it = imported.find(name); it != imported.end()) return it->second;
  const auto dir = std::filesystem::temp_directory_path() / ("memreplay-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string output = (dir / (name + ".mrt")).string();
  TraceWriter writer(output);
  import_file((shared_dir() / "traces" / (name + ".pickle.xz")).string(), writer);
  return imported[name] = output;
}

}  // namespace memreplay::testing
