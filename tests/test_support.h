// Helpers shared by tests: where the real data is, importing a real trace once per test binary.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace memreplay::testing {

inline std::filesystem::path shared_dir() { return MEMREPLAY_SHARED_DIR; }
inline std::filesystem::path source_dir() { return MEMREPLAY_SOURCE_DIR; }

nlohmann::json read_json(const std::filesystem::path& path);

// Imports ../shared/traces/NAME.pickle.xz into a .mrt in a temporary directory, once per process,
// and returns the trace's path.
std::string imported_trace(const std::string& name);

}  // namespace memreplay::testing
