// The simulator against PyTorch's real allocator: one test per row of tests/data/real/groundtruth/replay
// (a real trace replayed through torch 2.11 under one PYTORCH_CUDA_ALLOC_CONF, optionally capped),
// plus the live runs whose traces are capped, truncated or call empty_cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "replayer/device_registry.h"
#include "replayer/replay_runner.h"
#include "replayer/sim/sim_device.h"
#include "tests/support/groundtruth_rows.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

namespace t = testing;
using nlohmann::json;

// A SimDevice that also logs its driver calls as PyTorch's segment trace actions would name them.
// Its own Device base applies the capacity; the SimDevice inside has none, so that it grants what
// this one admits (Device::admit).
class RecordingSimDevice final : public Device {
 public:
  explicit RecordingSimDevice(SimDevice::Options options)
      : Device(options.total_memory, options.capacity), sim_(uncapped(options)) {}
  static inline std::vector<std::pair<std::string, uint64_t>> log;  // of the last replay

  void recorded_malloc(uint64_t address, uint64_t bytes) override { sim_.recorded_malloc(address, bytes); }
  void recorded_free(uint64_t address) override { sim_.recorded_free(address); }
  bool left_recorded_placement() const override { return sim_.left_recorded_placement(); }
  uint64_t granularity() const override { return sim_.granularity(); }
  std::vector<std::pair<uint64_t, uint64_t>> backed_ranges() const override { return sim_.backed_ranges(); }

 private:
  std::optional<uint64_t> do_malloc(uint64_t bytes) override {
    auto address = sim_.malloc(bytes);
    if (address) log.emplace_back("segment_alloc", bytes);
    return address;
  }
  std::optional<uint64_t> do_free(uint64_t address) override {
    // A foreign address is refused before anything is logged, as the Device contract asks.
    const uint64_t before = sim_.counters().reserved_bytes;
    if (!sim_.free(address)) return std::nullopt;
    const uint64_t bytes = before - sim_.counters().reserved_bytes;
    log.emplace_back("segment_free", bytes);
    return bytes;
  }
  std::optional<uint64_t> do_reserve_address(uint64_t bytes) override { return sim_.reserve_address(bytes); }
  void do_release_address(uint64_t address, uint64_t bytes) override { sim_.release_address(address, bytes); }
  bool do_map(uint64_t address, uint64_t bytes) override {
    const bool ok = sim_.map(address, bytes);
    if (ok) log.emplace_back("segment_map", bytes);
    return ok;
  }
  void do_unmap(uint64_t address, uint64_t bytes) override {
    log.emplace_back("segment_unmap", bytes);
    sim_.unmap(address, bytes);
  }

  static SimDevice::Options uncapped(SimDevice::Options options) {
    options.capacity.reset();
    return options;
  }

  SimDevice sim_;
};

MEMREPLAY_REGISTER_DEVICE(recording_sim, "recording-sim", "SimDevice that logs driver calls (tests)",
                          [](const DeviceRequest& r) -> std::unique_ptr<Device> {
                            RecordingSimDevice::log.clear();
                            SimDevice::Options options;
                            if (r.total_memory != 0) options.total_memory = r.total_memory;
                            options.capacity = r.capacity;
                            options.follow_recorded_placement = r.follow_recorded_placement;
                            return std::make_unique<RecordingSimDevice>(options);
                          });

// PyTorch's results, one file a row: tests/data/real/groundtruth/replay/ROW.json.
constexpr size_t kReplayRows = 35;
std::vector<std::string> replay_rows() { return testing::real_data_names("groundtruth/replay", ".json"); }

// Without the data GroundTruthReplay has no instances (and gtest's check of that names no folder):
// this fails then, saying where it looked.
TEST(GroundTruthData, HasEveryReplayRow) {
  const auto dir = t::real_data_path("groundtruth/replay");
  EXPECT_EQ(replay_rows().size(), kReplayRows) << "*.json in " << dir;
}

class GroundTruthReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(GroundTruthReplay, MatchesPyTorchToTheByte) {
  const json truth = t::read_json(t::real_data_path("groundtruth/replay/" + GetParam() + ".json"));
  const json& run = truth["run"];
  const std::string snapshot = truth["snapshot"];
  const std::string trace = t::imported_trace(snapshot.substr(0, snapshot.find(".pickle")));

  ReplayOptions request;
  request.trace_path = trace;
  request.policy_spec = t::policy_for(truth["alloc_conf"]);
  request.device_spec = "recording-sim";
  if (!run["cap_bytes"].is_null()) request.capacity = run["cap_bytes"].get<uint64_t>();
  const ReplayMetrics m = run_replay(request);

  t::expect_equals_replay_row(m, run);
  if (!m.oom_at_event) EXPECT_EQ(m.events, run["events"].get<uint64_t>());

  std::vector<std::pair<std::string, uint64_t>> expected;
  for (const auto& e : run["segment_events"]) expected.emplace_back(e[0].get<std::string>(), e[1].get<uint64_t>());
  EXPECT_EQ(RecordingSimDevice::log, expected);

  // The invariant every replay keeps.
  EXPECT_GE(m.reserved_peak, m.allocated_peak);
  EXPECT_GE(m.allocated_peak, m.requested_peak);

  if (truth.contains("min_fit_bytes") && !truth["min_fit_bytes"].is_null()) {
    // PyTorch's bisection ended with min_fit_bytes fitting and one resolution step below it
    // failing. Whether a cap fits is not monotonic in the cap (vit_infer_varbatch fits at 1.085 GB,
    // fails between 1.10 and 1.14 GB), so a bisection's answer depends on its bounds: the
    // simulator must agree on the two points that pinned PyTorch's answer.
    request.device_spec = "sim";
    const uint64_t want = truth["min_fit_bytes"];
    const uint64_t resolution = truth["min_fit_resolution_bytes"];
    request.capacity = want;
    EXPECT_FALSE(run_replay(request).oom_at_event.has_value()) << "does not fit at PyTorch's min fit " << want;
    request.capacity = want - resolution;
    EXPECT_TRUE(run_replay(request).oom_at_event.has_value()) << "fits one resolution step below " << want;
  }
}

INSTANTIATE_TEST_SUITE_P(AllRows, GroundTruthReplay, ::testing::ValuesIn(replay_rows()), t::RowNamePrinter());

// Live runs whose traces themselves carry the condition: a cap, a ring buffer that wrapped,
// empty_cache calls. Reserved peak and device call counts must equal the run's own stats.
struct LiveRun {
  std::string trace;  // tests/data/real/traces/TRACE.pickle.xz
  std::string run;  // tests/data/real/groundtruth/runs/RUN.json
  friend void PrintTo(const LiveRun& r, std::ostream* os) { *os << r.run; }
};

class GroundTruthLiveRun : public ::testing::TestWithParam<LiveRun> {};

TEST_P(GroundTruthLiveRun, ReservedPeakAndDeviceCallsMatch) {
  const json run = t::read_json(t::real_data_path("groundtruth/runs/" + GetParam().run + ".json"));
  ReplayOptions request;
  request.trace_path = t::imported_trace(GetParam().trace);
  request.policy_spec = t::policy_for(run["alloc_conf"]);
  request.capacity = t::live_cap_bytes(run);
  t::expect_equals_live_run(run_replay(request), run);
}

INSTANTIATE_TEST_SUITE_P(Runs, GroundTruthLiveRun,
                         ::testing::Values(LiveRun{"gpt2_train.capped", "gpt2_train.capped"},
                                           LiveRun{"gpt2_train.truncated", "gpt2_train.truncated"},
                                           LiveRun{"vit_infer_varbatch.emptycache", "vit_infer_varbatch.emptycache"}),
                         [](const auto& info) { return t::test_name_of(info.param.run); });

}  // namespace
}  // namespace memreplay
