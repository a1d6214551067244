// The Policy contract, over every registered policy and each option set its registration lists
// (PolicyInfo::contract_option_sets): a new policy gets these tests by registering.
//
// Each case replays a random program with a fixed seed (allocations of small and large sizes on
// three streams, frees in random order, stream events, empty_cache, under a capacity that makes
// some allocations fail; the capacity itself is the policy's to apply, and PyTorch's expandable
// segments may pass it by part of a page) on a SimDevice and checks after every step:
//   - a block is at least the request, and no two live blocks overlap;
//   - every live block lies in memory the device has backed; reserved = Σ backed ranges;
//   - reserved >= allocated >= requested;
//   - the device's books balance: reserved = bytes ever reserved - bytes ever released;
//   - stats().ooms counts the failed allocations;
// and, at points of the program, that a free of an address the policy did not hand out and a
// zero-byte allocation are refused (PolicyContractError) without changing anything. At the end:
// after every free and empty_cache nothing stays reserved and every cudaMalloc, reservation and
// pool allocation has its free (where the policy releases), and a second run of the same program
// gives the same result.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "base/units.h"
#include "policies/plugin/plugin_loader.h"
#include "policies/registry.h"
#include "replayer/sim/sim_device.h"

namespace memreplay {
namespace {

constexpr uint64_t kCapacity = 768 * kMiB;
constexpr int kSteps = 3000;

struct ContractCase {
  std::string spec;  // NAME or NAME:OPTIONS
  friend void PrintTo(const ContractCase& c, std::ostream* os) { *os << c.spec; }
};

std::vector<ContractCase> all_cases() {
  std::vector<ContractCase> cases;
  for (const PolicyInfo& info : PolicyRegistry::instance().policies())
    for (const std::string& options : info.contract_option_sets)
      cases.push_back({options.empty() ? info.name : info.name + ":" + options});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<ContractCase>& info) {
  std::string name = std::to_string(info.index) + "_";
  for (const char c : info.param.spec) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

// What a run leaves behind, to compare two runs of one program.
struct Outcome {
  std::vector<uint64_t> trail;  // per step: block address and size or 0, reserved bytes
  uint64_t ooms = 0;
  bool operator==(const Outcome&) const = default;
};

struct LiveBlock {
  uint64_t size;
  uint64_t requested;
  StreamId stream;
};

class ContractRun {
 public:
  explicit ContractRun(const std::string& spec)
      : spec_(spec),
        device_(SimDevice::Options{.capacity = kCapacity}),
        policy_(PolicyRegistry::instance().create(spec, device_)) {}

  Outcome run() {
    std::mt19937_64 rng(20261201);
    const StreamId streams[] = {0, 7, 0x55};
    uint64_t next_event = 1;
    std::vector<std::pair<uint64_t, StreamId>> recorded;  // cuda events recorded so far
    for (int step = 0; step < kSteps; ++step) {
      const unsigned op = rng() % 100;
      if (op < 52 || live_.empty()) {
        const uint64_t bytes = rng() % 4 == 0 ? 1 + rng() % (48 * kMiB) : 1 + rng() % (1 * kMiB);
        allocate(bytes, streams[rng() % 3]);
      } else if (op < 94) {
        auto it = live_.begin();
        std::advance(it, static_cast<long>(rng() % live_.size()));
        free(it->first);
      } else if (op < 96) {
        policy_->empty_cache();
        outcome_.trail.push_back(device_.counters().reserved_bytes);
      } else if (op < 98 || recorded.empty()) {
        const StreamId stream = streams[rng() % 3];
        policy_->on_stream_event(stream, next_event, false);
        recorded.emplace_back(next_event++, stream);
      } else {
        const auto& [event, _] = recorded[rng() % recorded.size()];
        policy_->on_stream_event(streams[rng() % 3], event, true);
      }
      if (step % 97 == 0) check_refusals();
      check_invariants();
      if (::testing::Test::HasFatalFailure()) return outcome_;
    }
    while (!live_.empty()) free(live_.begin()->first);
    policy_->empty_cache();
    check_invariants();
    const DeviceCounters& c = device_.counters();
    EXPECT_EQ(c.pool_malloc_calls, c.pool_free_calls) << "a pool allocation never freed";
    if (PolicyRegistry::instance().find(spec_.substr(0, spec_.find(':')))->releases_on_empty_cache) {
      EXPECT_EQ(c.reserved_bytes, 0u) << "reserved after every free and empty_cache";
      EXPECT_EQ(c.malloc_calls, c.free_calls) << "a cudaMalloc never freed";
      EXPECT_EQ(c.reserve_calls, c.release_calls) << "an address reservation never released";
    }
    outcome_.trail.push_back(device_.counters().reserved_bytes);
    outcome_.ooms = failed_;
    return outcome_;
  }

 private:
  void allocate(uint64_t bytes, StreamId stream) {
    const auto block = policy_->allocate(bytes, stream);
    if (!block) {
      ++failed_;
      outcome_.trail.push_back(0);
      EXPECT_EQ(policy_->stats().ooms, failed_) << "stats().ooms counts every failed allocation";
      return;
    }
    ASSERT_GE(block->size, bytes) << "a block smaller than the request";
    ASSERT_FALSE(live_.contains(block->address)) << "an address handed out twice";
    live_[block->address] = LiveBlock{block->size, bytes, stream};
    allocated_ += block->size;
    requested_ += bytes;
    outcome_.trail.push_back(block->address);
    outcome_.trail.push_back(block->size);
  }

  void free(uint64_t address) {
    const LiveBlock block = live_.at(address);
    policy_->free(address, block.stream);
    live_.erase(address);
    allocated_ -= block.size;
    requested_ -= block.requested;
    outcome_.trail.push_back(device_.counters().reserved_bytes);
  }

  // A free of an address never handed out (inside a live block, or far outside) and a zero-byte
  // allocation: refused, and nothing changes.
  void check_refusals() {
    const DeviceCounters before = device_.counters();
    const uint64_t unknown = live_.empty() ? 0x1000 : live_.begin()->first + 1;
    EXPECT_THROW(policy_->free(unknown, 0), PolicyContractError) << "free of unknown " << unknown;
    EXPECT_THROW(policy_->free(0xdead'0000'0000ull, 0), PolicyContractError);
    EXPECT_THROW(policy_->allocate(0, 0), PolicyContractError);
    EXPECT_EQ(device_.counters().reserved_bytes, before.reserved_bytes);
    EXPECT_EQ(device_.counters().malloc_calls, before.malloc_calls);
    EXPECT_EQ(device_.counters().free_calls, before.free_calls);
    EXPECT_EQ(device_.counters().pool_free_calls, before.pool_free_calls);
  }

  void check_invariants() {
    const DeviceCounters& c = device_.counters();
    ASSERT_GE(c.reserved_bytes, allocated_) << "reserved < allocated";
    ASSERT_GE(allocated_, requested_) << "allocated < requested";
    ASSERT_EQ(c.reserved_bytes, c.reserved_bytes_allocated - c.reserved_bytes_freed);
    const auto backed = device_.backed_ranges();
    uint64_t backed_bytes = 0;
    for (const auto& [start, end] : backed) backed_bytes += end - start;
    ASSERT_EQ(backed_bytes, c.reserved_bytes) << "reserved differs from what the device backs";
    // Live blocks in address order: disjoint, each inside one backed range.
    uint64_t previous_end = 0;
    auto range = backed.begin();
    for (const auto& [address, block] : live_) {
      ASSERT_GE(address, previous_end) << "live blocks overlap at " << address;
      previous_end = address + block.size;
      while (range != backed.end() && range->second <= address) ++range;
      ASSERT_TRUE(range != backed.end() && range->first <= address && previous_end <= range->second)
          << "block [" << address << ", +" << block.size << ") is not in backed memory";
    }
  }

  std::string spec_;
  SimDevice device_;
  std::unique_ptr<Policy> policy_;
  std::map<uint64_t, LiveBlock> live_;  // policy address -> block
  uint64_t allocated_ = 0;
  uint64_t requested_ = 0;
  uint64_t failed_ = 0;
  Outcome outcome_;
};

class PolicyContract : public ::testing::TestWithParam<ContractCase> {};

#ifdef MEMREPLAY_EXAMPLE_PLUGIN
// The C ABI plugins register before the suite is built, so that they run it like any policy. One
// that cannot be loaded (a test binary carried to another machine without them) fails the test
// below: thrown from here, it would end the binary before any test ran.
const std::string plugins_not_loaded = [] {
  try {
    load_policy_plugin(MEMREPLAY_EXAMPLE_PLUGIN);
    load_policy_plugin(std::string(MEMREPLAY_TEST_PLUGIN_DIR) + "/test_plugin_0.so");
  } catch (const std::exception& error) {
    return std::string(error.what());
  }
  return std::string();
}();

TEST(PolicyContractPlugins, TheExamplePluginsAreLoaded) { EXPECT_EQ(plugins_not_loaded, ""); }
#endif

TEST_P(PolicyContract, RandomProgramKeepsTheContractAndRepeatsExactly) {
  const Outcome first = ContractRun(GetParam().spec).run();
  if (HasFatalFailure()) return;
  EXPECT_GT(first.trail.size(), static_cast<size_t>(kSteps)) << "the program did not run";
  EXPECT_GT(first.ooms, 0u) << "the capacity never bit: the OOM path went untested";
  const Outcome second = ContractRun(GetParam().spec).run();
  EXPECT_TRUE(first == second) << "a second run of the same program differs";
}

INSTANTIATE_TEST_SUITE_P(EveryRegisteredPolicy, PolicyContract, ::testing::ValuesIn(all_cases()), case_name);

// ---- private pools: what a CUDA graph captured stays the graph's --------------------------------

// Whether [address, address + bytes) lies in memory the device backs.
bool backed(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t address, uint64_t bytes) {
  auto range = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(address, UINT64_MAX));
  return range != ranges.begin() && std::prev(range)->first <= address && address + bytes <= std::prev(range)->second;
}

// Two graphs captured into one private pool, with eager work and empty_cache between and after
// their captures (a graph's temporaries are freed inside its capture, its outputs later): while
// the pool lives, no block of the default pool overlaps anything the pool ever handed out, and
// all of it stays backed (a graph replay writes it). Once the pool is released and its blocks
// freed, empty_cache gives everything back. cuda_async is left out: its graph blocks stand for
// the driver's graph memory nodes, which the graph itself owns (cuda_async_policy.cpp).
TEST_P(PolicyContract, APrivatePoolsMemoryStaysTheGraphsUntilTheGraphIsGone) {
  SimDevice device(SimDevice::Options{});
  std::unique_ptr<Policy> policy = PolicyRegistry::instance().create(GetParam().spec, device);
  if (policy->stats().uses_device_pool) GTEST_SKIP() << "graph memory is the driver's (cuda_async)";
  const PolicyInfo& info = *PolicyRegistry::instance().find(GetParam().spec.substr(0, GetParam().spec.find(':')));
  if (!info.reserves_up_front.empty() && GetParam().spec.find("allow_growth:") == std::string::npos)
    GTEST_SKIP() << "takes the device's memory at its first request: nothing is left for a pool of its own";
  std::mt19937_64 rng(20261207);
  constexpr PoolId kGraphPool = 1;
  constexpr StreamId kCaptureStream = 0x77;
  std::map<uint64_t, uint64_t> eager;  // live default-pool blocks: address -> size
  std::map<uint64_t, uint64_t> graph_live;  // live pool blocks
  std::vector<std::pair<uint64_t, uint64_t>> graph_ever;  // every pool block handed out
  const auto size = [&] { return rng() % 3 == 0 ? 1 + rng() % (40 * kMiB) : 1 + rng() % (2 * kMiB); };
  const auto overlaps_graph = [&](uint64_t address, uint64_t bytes) {
    return std::any_of(graph_ever.begin(), graph_ever.end(),
                       [&](const auto& g) { return g.first < address + bytes && address < g.first + g.second; });
  };
  const auto eager_work = [&](int steps) {
    for (int step = 0; step < steps; ++step) {
      if (rng() % 100 < 55 || eager.empty()) {
        const auto block = policy->allocate(size(), rng() % 2 == 0 ? 0 : 7);
        if (!block) continue;  // a policy's own maximum (rmm_pool's maximum_pool_size)
        ASSERT_FALSE(overlaps_graph(block->address, block->size))
            << "a default-pool block at 0x" << std::hex << block->address << " in memory the graph replays";
        eager[block->address] = block->size;
      } else {
        auto it = eager.begin();
        std::advance(it, static_cast<long>(rng() % eager.size()));
        policy->free(it->first, 0);
        eager.erase(it);
      }
      if (step % 50 == 49) policy->empty_cache();
      const auto ranges = device.backed_ranges();
      for (const auto& [address, bytes] : graph_ever)
        ASSERT_TRUE(backed(ranges, address, bytes)) << "graph memory at 0x" << std::hex << address << " given back";
    }
  };
  const auto capture = [&](int allocations) {
    std::vector<uint64_t> temporaries;
    for (int i = 0; i < allocations; ++i) {
      const auto block = policy->allocate_in_pool(size(), kCaptureStream, kGraphPool, Capture::capturing);
      if (!block) continue;
      for (const auto& [address, bytes] : eager)
        ASSERT_FALSE(address < block->address + block->size && block->address < address + bytes)
            << "a graph block over a live default-pool block";
      graph_ever.emplace_back(block->address, block->size);
      graph_live[block->address] = block->size;
      if (rng() % 3 != 0) temporaries.push_back(block->address);
      if (temporaries.size() > 3) {  // a temporary freed inside the capture
        policy->free(temporaries.front(), kCaptureStream);
        graph_live.erase(temporaries.front());
        temporaries.erase(temporaries.begin());
      }
    }
  };
  eager_work(200);
  capture(60);
  if (HasFatalFailure()) return;
  eager_work(400);
  capture(40);  // a second graph into the same pool
  if (HasFatalFailure()) return;
  eager_work(400);
  if (HasFatalFailure()) return;
  EXPECT_GE(graph_ever.size(), 90u) << "the pool served too few of the captures' requests";

  // The graphs are destroyed: the pool goes, its outputs freed last.
  policy->release_pool(kGraphPool);
  for (const auto& [address, bytes] : graph_live) policy->free(address, kCaptureStream);
  for (const auto& [address, bytes] : eager) policy->free(address, 0);
  policy->empty_cache();
  if (info.releases_on_empty_cache)
    EXPECT_EQ(device.counters().reserved_bytes, 0u) << "the pool's memory after it was released and emptied";
}

TEST(PolicyContractSuite, CoversEveryBuiltInPolicyAndEachPytorchOptionFamily) {
  std::vector<std::string> specs;
  for (const ContractCase& c : all_cases()) specs.push_back(c.spec);
  auto covers = [&](const std::string& needle) {
    for (const std::string& spec : specs)
      if (spec.find(needle) != std::string::npos) return true;
    return false;
  };
  for (const std::string needle :
       {"passthrough", "cuda_async", "pytorch", "expandable_segments:True", "max_split_size_mb",
        "max_non_split_rounding_mb", "roundup_power2_divisions:4", "roundup_power2_divisions:[",
        "garbage_collection_threshold", "large_segment_size_mb", "release_threshold"})
    EXPECT_TRUE(covers(needle)) << needle;
}

// ---- the registry -------------------------------------------------------------------------------

TEST(PolicyRegistry, RefusesASecondPolicyOfTheSameName) {
  PolicyInfo again{.name = "passthrough", .description = "a copy", .options_help = "", .factory = nullptr};
  try {
    PolicyRegistry::instance().add(again);
    FAIL() << "a duplicate name must be refused";
  } catch (const detail::RegistrationError& e) {
    EXPECT_NE(std::string(e.what()).find("'passthrough' is registered twice"), std::string::npos) << e.what();
  }
  size_t named = 0;
  for (const PolicyInfo& info : PolicyRegistry::instance().policies()) named += info.name == "passthrough";
  EXPECT_EQ(named, 1u);
  EXPECT_THROW(PolicyRegistry::instance().add(PolicyInfo{.name = "bad:name"}), detail::RegistrationError);
}

TEST(PolicyRegistry, UnknownPolicyNamesTheValidOnes) {
  SimDevice device(SimDevice::Options{});
  try {
    PolicyRegistry::instance().create("tcmalloc:fast:True", device);
    FAIL();
  } catch (const PolicySpecError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("unknown policy 'tcmalloc'"), std::string::npos) << message;
    EXPECT_NE(message.find("passthrough, "), std::string::npos) << message;
  }
}

#ifdef MEMREPLAY_TEST_POLICY_PLUGIN
// A plugin linked against libmemreplay_policies.so registers into this executable's registry
// (not into a copy of its own), and its policy keeps the contract like the built-in ones.
TEST(PolicyRegistry, ADlopenedPluginRegistersIntoTheOneRegistry) {
  ASSERT_EQ(PolicyRegistry::instance().find("test_plugin_exact_size"), nullptr);
  // Never closed: the registry keeps the plugin's factory.
  void* plugin = dlopen(MEMREPLAY_TEST_POLICY_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(plugin, nullptr) << dlerror();
  const PolicyInfo* info = PolicyRegistry::instance().find("test_plugin_exact_size");
  ASSERT_NE(info, nullptr) << "the plugin registered into another registry";
  EXPECT_EQ(info->description, "test plugin: exact-size caching of 4 KiB-rounded blocks");

  const Outcome outcome = ContractRun("test_plugin_exact_size").run();
  EXPECT_GT(outcome.trail.size(), static_cast<size_t>(kSteps));
  SimDevice device(SimDevice::Options{});
  auto policy = PolicyRegistry::instance().create("test_plugin_exact_size", device);
  const auto block = policy->allocate(1, 0);
  EXPECT_EQ(block->size, 4096u);
  policy->free(block->address, 0);
  EXPECT_EQ(policy->allocate(4000, 0)->address, block->address);  // from the plugin's cache
  EXPECT_THROW(PolicyRegistry::instance().create("test_plugin_exact_size:x:1", device), PolicySpecError);
}
#endif

}  // namespace
}  // namespace memreplay
