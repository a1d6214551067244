// What the ground-truth tests share (tests/groundtruth_replay_test.cpp for tests/data/real's rows,
// tests/pool_groundtruth_test.cpp for tests/data/pools/): the policy of a row's
// PYTORCH_CUDA_ALLOC_CONF, the cap of a live run, a replay checked field by field against a row
// of PyTorch's own replay or against a live run's statistics, and test names made of row names.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "replayer/metrics.h"

namespace memreplay::testing {

inline std::string policy_for(const std::string& alloc_conf) {
  return alloc_conf.empty() ? "pytorch" : "pytorch:" + alloc_conf;
}

// A live run's cap (set_per_process_memory_fraction) in bytes: "cap" × "total_memory"; none at 0.
inline std::optional<uint64_t> live_cap_bytes(const nlohmann::json& live) {
  if (live.at("cap").get<double>() <= 0) return std::nullopt;
  return static_cast<uint64_t>(live.at("cap").get<double>() * live.at("total_memory").get<double>());
}

// Every field of a row's "run" (what PyTorch's real allocator did replaying the trace).
inline void expect_equals_replay_row(const ReplayMetrics& m, const nlohmann::json& run) {
  EXPECT_EQ(m.reserved_peak, run["reserved_peak"].get<uint64_t>());
  EXPECT_EQ(m.allocated_peak, run["allocated_peak"].get<uint64_t>());
  EXPECT_EQ(m.requested_peak, run["requested_peak"].get<uint64_t>());
  EXPECT_EQ(m.device_alloc_calls, run["num_device_alloc"].get<uint64_t>());
  EXPECT_EQ(m.device_free_calls, run["num_device_free"].get<uint64_t>());
  EXPECT_EQ(m.alloc_retries, run["num_alloc_retries"].get<uint64_t>());
  EXPECT_EQ(m.ooms, run["num_ooms"].get<uint64_t>());
  if (run["oom_at_event"].is_null())
    EXPECT_FALSE(m.oom_at_event.has_value());
  else
    EXPECT_EQ(m.oom_at_event, std::optional<uint64_t>(run["oom_at_event"].get<uint64_t>()));
}

// A live run's own statistics (max_memory_reserved() and memory_stats()); it never ran out.
inline void expect_equals_live_run(const ReplayMetrics& m, const nlohmann::json& live, bool with_retries = true) {
  EXPECT_EQ(m.reserved_peak, live["max_memory_reserved"].get<uint64_t>());
  EXPECT_EQ(m.device_alloc_calls, live["stats"]["num_device_alloc"].get<uint64_t>());
  EXPECT_EQ(m.device_free_calls, live["stats"]["num_device_free"].get<uint64_t>());
  if (with_retries) EXPECT_EQ(m.alloc_retries, live["stats"]["num_alloc_retries"].get<uint64_t>());
  EXPECT_FALSE(m.oom_at_event.has_value());
}

// A row name as a test name: every character but letters and digits becomes '_'.
inline std::string test_name_of(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}
struct RowNamePrinter {
  template <typename Info>
  std::string operator()(const Info& info) const {
    return test_name_of(info.param);
  }
};

}  // namespace memreplay::testing
