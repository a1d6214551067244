// The Device contract (policies/device.h), over every registered device ("sim", "cuda" where a
// GPU is visible, the tests' "recording-sim") and the benchmarks' BumpDevice:
// - free() of an address that is not a live malloc() (inside one, a pool allocation, a
//   reservation, one never handed out, one freed already) returns false with the counters and
//   backed ranges unchanged, and so does pool_free_async() of an address that is not a live pool
//   allocation; free_held(), for a caller that holds what it frees, turns that false into a
//   logic_error;
// - the counters balance over random call sequences, capped and not: reserved bytes are the live
//   mallocs + mapped pages + the pool's reserve, allocated - freed = reserved, every call counted
//   once, and all of it back to zero once everything is given back;
// - the capacity holds for malloc, map and pool growth alike, and maps a policy's own cap admitted
//   (admit()) may end past it by less than one call;
// - page calls outside the contract (a map twice, an unmap of pages not mapped, ...) are
//   logic_errors that change nothing.
// A new device gets these tests by registering.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/units.h"
#include "policies/device.h"
#include "proto/input_error.h"
#include "replayer/device_registry.h"
#include "tools/bench/bump_device.h"

namespace memreplay {
namespace {

// Where the trace "recorded" the cudaMalloc, for the cases where SimDevice follows the record
// (its segments there are kept apart from the model's: replayer/sim_device.h).
constexpr uint64_t kRecordedAddress = 0x7f8c'9800'0000ull;
// The registered devices built on SimDevice, which place a malloc where the trace recorded it.
bool follows_recorded_placement(const std::string& device) { return device == "sim" || device == "recording-sim"; }

struct DeviceCase {
  std::string name;
  // With the per-process cap given; throws InputError where the device cannot run.
  std::function<std::unique_ptr<Device>(std::optional<uint64_t> capacity)> make;
  bool follows_a_recorded_malloc = false;  // the malloc lands where recorded_malloc() put it
  friend void PrintTo(const DeviceCase& c, std::ostream* os) { *os << c.name; }
};

std::vector<DeviceCase> all_cases() {
  std::vector<DeviceCase> cases;
  for (const DeviceInfoEntry& entry : DeviceRegistry::instance().devices()) {
    const std::string name = entry.name;
    const auto make = [name](bool follow) {
      return [name, follow](std::optional<uint64_t> capacity) {
        DeviceRequest request;
        request.follow_recorded_placement = follow;
        request.capacity = capacity;
        return DeviceRegistry::instance().create(name, request);
      };
    };
    cases.push_back({name, make(false)});
    if (follows_recorded_placement(name)) cases.push_back({name + "_following_the_record", make(true), true});
  }
  cases.push_back(
      {"bench_bump", [](std::optional<uint64_t> capacity) { return std::make_unique<bench::BumpDevice>(capacity); }});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<DeviceCase>& info) {
  std::string name;
  for (const char c : info.param.name) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

class DeviceContract : public ::testing::TestWithParam<DeviceCase> {
 protected:
  void SetUp() override {
    try {
      device_ = GetParam().make(std::nullopt);
    } catch (const InputError& e) {
      GTEST_SKIP() << e.what();
    }
  }
  // A live cudaMalloc of 1 MiB, where the record put it when the case follows one.
  uint64_t live_malloc() {
    if (GetParam().follows_a_recorded_malloc) device_->recorded_malloc(kRecordedAddress, kMiB);
    const std::optional<uint64_t> address = device_->malloc(kMiB);
    EXPECT_TRUE(address.has_value()) << "a 1 MiB cudaMalloc failed";
    if (GetParam().follows_a_recorded_malloc) EXPECT_EQ(address, kRecordedAddress);
    return address.value_or(0);
  }

  std::unique_ptr<Device> device_;
};

TEST_P(DeviceContract, RefusesTheFreeOfAnAddressThatIsNotALiveMallocAndChangesNothing) {
  const uint64_t address = live_malloc();
  ASSERT_NE(address, 0u);
  // Addresses the device handed out, but not from malloc(), where it can.
  std::optional<uint64_t> pool_address;
  if (device_->configure_pool(PoolConfig{})) pool_address = device_->pool_malloc_async(kMiB, 0);
  const std::optional<uint64_t> reservation = device_->reserve_address(device_->granularity());

  const DeviceCounters before = device_->counters();
  const auto ranges_before = device_->backed_ranges();
  std::vector<uint64_t> foreign = {address + 512, address + kMiB, 0, 0xdead'0000'0000ull};
  if (pool_address) foreign.push_back(*pool_address);
  if (reservation) foreign.push_back(*reservation);
  for (const uint64_t other : foreign) EXPECT_FALSE(device_->free(other)) << "free of foreign 0x" << std::hex << other;
  EXPECT_EQ(device_->counters(), before) << "a refused free changed the counters";
  EXPECT_EQ(device_->backed_ranges(), ranges_before);

  // The live one still frees, once.
  EXPECT_TRUE(device_->free(address));
  const DeviceCounters after = device_->counters();
  EXPECT_EQ(after.free_calls, before.free_calls + 1);
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes - kMiB);
  EXPECT_FALSE(device_->free(address)) << "a second free of the same address";
  EXPECT_EQ(device_->counters(), after) << "a refused second free changed the counters";

  if (pool_address) EXPECT_TRUE(device_->pool_free_async(*pool_address));
  if (reservation) device_->release_address(*reservation, device_->granularity());
}

TEST_P(DeviceContract, RefusesAPoolFreeOfAnAddressThatIsNotALivePoolAllocationAndChangesNothing) {
  const uint64_t address = live_malloc();
  ASSERT_NE(address, 0u);
  std::optional<uint64_t> pool_address;
  if (device_->configure_pool(PoolConfig{})) pool_address = device_->pool_malloc_async(kMiB, 0);

  const DeviceCounters before = device_->counters();
  EXPECT_FALSE(device_->pool_free_async(address)) << "a cudaMalloc'd address is no pool allocation";
  EXPECT_FALSE(device_->pool_free_async(0xdead'0000'0000ull));
  EXPECT_EQ(device_->counters(), before);
  if (pool_address) {
    EXPECT_TRUE(device_->pool_free_async(*pool_address));
    const DeviceCounters after = device_->counters();
    EXPECT_EQ(after.pool_free_calls, before.pool_free_calls + 1);
    EXPECT_FALSE(device_->pool_free_async(*pool_address)) << "a second pool free of the same address";
    EXPECT_EQ(device_->counters(), after);
  }
  EXPECT_TRUE(device_->free(address));
}

// What a caller holds, kept beside the device to check its counters against.
struct Held {
  struct Reservation {
    uint64_t bytes;
    std::vector<bool> mapped;  // per page
  };
  std::map<uint64_t, uint64_t> mallocs;  // address -> bytes
  std::map<uint64_t, Reservation> reservations;
  std::map<uint64_t, uint64_t> pool;  // address -> bytes asked for
  uint64_t page = 0;

  uint64_t malloc_bytes() const {
    uint64_t sum = 0;
    for (const auto& [address, bytes] : mallocs) sum += bytes;
    return sum;
  }
  uint64_t mapped_bytes() const {
    uint64_t sum = 0;
    for (const auto& [address, r] : reservations) sum += page * std::count(r.mapped.begin(), r.mapped.end(), true);
    return sum;
  }
  uint64_t pool_bytes() const {
    uint64_t sum = 0;
    for (const auto& [address, bytes] : pool) sum += bytes;
    return sum;
  }
};

// The counters against what the caller holds: bytes add up, and every call is counted once.
struct Expected {
  uint64_t mallocs = 0, frees = 0, reserves = 0, releases = 0, maps = 0, unmaps = 0, failed = 0;
  uint64_t pool_mallocs = 0, pool_frees = 0, pool_trims = 0;
  uint64_t highest_reserved = 0;
};

void expect_balanced(const Device& device, const Held& held, Expected& expected, std::optional<uint64_t> capacity,
                     const std::string& step) {
  const DeviceCounters& c = device.counters();
  expected.highest_reserved = std::max(expected.highest_reserved, c.reserved_bytes);
  EXPECT_EQ(c.reserved_bytes, held.malloc_bytes() + held.mapped_bytes() + c.pool_reserved_bytes) << step;
  EXPECT_EQ(c.reserved_bytes_allocated - c.reserved_bytes_freed, c.reserved_bytes) << step;
  EXPECT_EQ(c.reserved_peak, expected.highest_reserved) << step;
  EXPECT_GE(c.pool_reserved_bytes, c.pool_used_bytes) << step;
  EXPECT_EQ(c.pool_used_bytes, held.pool_bytes()) << step;
  if (capacity) EXPECT_LE(c.reserved_bytes, *capacity) << step;
  EXPECT_EQ(c.malloc_calls, expected.mallocs) << step;
  EXPECT_EQ(c.free_calls, expected.frees) << step;
  EXPECT_EQ(c.reserve_calls, expected.reserves) << step;
  EXPECT_EQ(c.release_calls, expected.releases) << step;
  EXPECT_EQ(c.map_calls, expected.maps) << step;
  EXPECT_EQ(c.unmap_calls, expected.unmaps) << step;
  EXPECT_EQ(c.failed_calls, expected.failed) << step;
  EXPECT_EQ(c.pool_malloc_calls, expected.pool_mallocs) << step;
  EXPECT_EQ(c.pool_free_calls, expected.pool_frees) << step;
  EXPECT_EQ(c.pool_trim_calls, expected.pool_trims) << step;
}

// A run of `length` unmapped (or mapped) pages of `r`, from a random page; nullopt if none.
std::optional<size_t> run_start(const Held::Reservation& r, bool mapped, size_t length, std::mt19937_64& rng) {
  const size_t pages = r.mapped.size();
  const size_t first = rng() % pages;
  for (size_t k = 0; k < pages; ++k) {
    const size_t start = (first + k) % pages;
    if (start + length > pages) continue;
    bool all = true;
    for (size_t i = start; i < start + length; ++i) all = all && r.mapped[i] == mapped;
    if (all) return start;
  }
  return std::nullopt;
}

// One random call: a malloc, free, reserve, map, unmap, release, pool malloc, pool free, trim or
// synchronize, with `held` and `expected` following what it did.
void random_call(Device& device, Held& held, Expected& expected, bool has_pool, std::mt19937_64& rng) {
  const auto pick = [&](auto& map) { return std::next(map.begin(), static_cast<long>(rng() % map.size())); };
  // A malloc's outcome: the block held in `blocks` and counted in `calls`, or a failed call counted.
  const auto note_malloc = [&](std::optional<uint64_t> address, uint64_t bytes, auto& blocks, uint64_t& calls) {
    if (address) {
      blocks.emplace(*address, bytes);
      ++calls;
    } else {
      ++expected.failed;
    }
  };
  const uint64_t choice = rng() % 10;
  switch (choice) {
    case 0: {
      const uint64_t bytes = 1 + rng() % (16 * kMiB);
      note_malloc(device.malloc(bytes), bytes, held.mallocs, expected.mallocs);
      break;
    }
    case 1:
      if (held.mallocs.empty()) break;
      {
        const auto it = pick(held.mallocs);
        EXPECT_TRUE(device.free(it->first));
        held.mallocs.erase(it);
        ++expected.frees;
      }
      break;
    case 2: {
      const size_t pages = 1 + rng() % 8;
      if (const auto address = device.reserve_address(pages * held.page)) {
        held.reservations.emplace(*address, Held::Reservation{pages * held.page, std::vector<bool>(pages, false)});
        ++expected.reserves;
      }
      break;
    }
    case 3:
    case 4: {  // map (3) or unmap (4) a run of pages
      if (held.reservations.empty()) break;
      auto& [base, r] = *pick(held.reservations);
      const bool map = choice == 3;
      const size_t length = 1 + rng() % 3;
      const auto start = run_start(r, !map, length, rng);
      if (!start) break;
      const uint64_t address = base + *start * held.page;
      if (!map) {
        device.unmap(address, length * held.page);
        ++expected.unmaps;
      } else if (device.map(address, length * held.page)) {
        ++expected.maps;
      } else {
        ++expected.failed;
        break;
      }
      for (size_t i = *start; i < *start + length; ++i) r.mapped[i] = map;
      break;
    }
    case 5: {  // release a reservation, after unmapping its pages one call each
      if (held.reservations.empty()) break;
      const auto it = pick(held.reservations);
      for (size_t i = 0; i < it->second.mapped.size(); ++i) {
        if (!it->second.mapped[i]) continue;
        device.unmap(it->first + i * held.page, held.page);
        ++expected.unmaps;
      }
      device.release_address(it->first, it->second.bytes);
      ++expected.releases;
      held.reservations.erase(it);
      break;
    }
    case 6:
      if (!has_pool) break;
      {
        const uint64_t bytes = 1 + rng() % (8 * kMiB);
        note_malloc(device.pool_malloc_async(bytes, rng() % 2), bytes, held.pool, expected.pool_mallocs);
      }
      break;
    case 7:
      if (!has_pool || held.pool.empty()) break;
      {
        const auto it = pick(held.pool);
        EXPECT_TRUE(device.pool_free_async(it->first));
        held.pool.erase(it);
        ++expected.pool_frees;
      }
      break;
    case 8:
      if (!has_pool) break;
      device.pool_trim(rng() % 2 == 0 ? 0 : 32 * kMiB);
      ++expected.pool_trims;
      break;
    case 9: device.synchronize(); break;
  }
}

TEST_P(DeviceContract, CountersBalanceOverRandomCallSequences) {
  for (const std::optional<uint64_t> capacity : {std::optional<uint64_t>(), std::optional<uint64_t>(96 * kMiB)}) {
    for (const uint64_t seed : {1u, 2u, 3u}) {
      std::unique_ptr<Device> device = GetParam().make(capacity);
      std::mt19937_64 rng(seed);
      Held held;
      held.page = device->granularity();
      Expected expected;
      const bool has_pool = device->configure_pool(PoolConfig{});
      for (int step = 0; step < 400; ++step) {
        random_call(*device, held, expected, has_pool, rng);
        expect_balanced(*device, held, expected, capacity,
                        "seed " + std::to_string(seed) + " step " + std::to_string(step));
        if (::testing::Test::HasFailure()) return;
      }
      // Give everything back: every map has its unmap, every malloc its free, nothing is left.
      for (const auto& [address, bytes] : held.mallocs) EXPECT_TRUE(device->free(address));
      for (const auto& [address, bytes] : held.pool) EXPECT_TRUE(device->pool_free_async(address));
      for (const auto& [base, r] : held.reservations) {
        for (size_t i = 0; i < r.mapped.size(); ++i)
          if (r.mapped[i]) device->unmap(base + i * held.page, held.page);
        device->release_address(base, r.bytes);
      }
      if (has_pool) device->pool_trim(0);
      const DeviceCounters& c = device->counters();
      EXPECT_EQ(c.reserved_bytes, 0u);
      EXPECT_EQ(c.reserved_bytes_allocated, c.reserved_bytes_freed);
      EXPECT_EQ(c.malloc_calls, c.free_calls);
      EXPECT_EQ(c.reserve_calls, c.release_calls);
      EXPECT_EQ(c.pool_malloc_calls, c.pool_free_calls);
      EXPECT_EQ(c.pool_used_bytes, 0u);
      EXPECT_EQ(device->backed_ranges().size(), 0u);
      if (capacity) EXPECT_LE(c.reserved_peak, *capacity);
    }
  }
}

// The capacity holds for every way of reserving memory, checked in the device base: a malloc, a
// map or a pool allocation past it fails (counted) and leaves nothing behind.
TEST_P(DeviceContract, TheCapacityHoldsForMallocMapAndPoolGrowth) {
  std::unique_ptr<Device> device = GetParam().make(8 * kMiB);
  const uint64_t page = device->granularity();
  ASSERT_EQ(page, 2 * kMiB);
  const std::optional<uint64_t> address = device->malloc(6 * kMiB);
  ASSERT_TRUE(address);
  EXPECT_FALSE(device->malloc(3 * kMiB));
  EXPECT_EQ(device->counters().failed_calls, 1u);
  if (const auto base = device->reserve_address(4 * page)) {
    EXPECT_FALSE(device->map(*base, 2 * page)) << "6 MiB + 4 MiB of pages under an 8 MiB cap";
    EXPECT_EQ(device->counters().failed_calls, 2u);
    EXPECT_EQ(device->counters().reserved_bytes, 6 * kMiB);
    EXPECT_TRUE(device->map(*base, page));
    EXPECT_EQ(device->counters().reserved_bytes, 8 * kMiB);
    device->unmap(*base, page);
    device->release_address(*base, 4 * page);
  }
  if (device->configure_pool(PoolConfig{})) {
    const uint64_t failed = device->counters().failed_calls;
    EXPECT_FALSE(device->pool_malloc_async(4 * kMiB, 0)) << "the pool cannot grow past the cap either";
    EXPECT_EQ(device->counters().failed_calls, failed + 1);
    EXPECT_EQ(device->counters().reserved_bytes, 6 * kMiB);
  }
  EXPECT_TRUE(device->free(*address));
  EXPECT_LE(device->counters().reserved_peak, 8 * kMiB);
}

// A policy that applies the cap itself, before it maps (PyTorch: by the request's segment size,
// then whole 20 MiB pages), admits the request first: the maps that follow may end past the cap
// while reserved bytes are below what it admitted, and the device's memory still bounds them.
TEST_P(DeviceContract, MapsAPolicysOwnCapAdmittedMayEndPastItByLessThanOneCall) {
  std::unique_ptr<Device> device = GetParam().make(9 * kMiB);
  const uint64_t page = device->granularity();
  const std::optional<uint64_t> base = device->reserve_address(8 * page);
  if (!base) GTEST_SKIP() << "no virtual memory management";
  ASSERT_TRUE(device->map(*base, 2 * page));  // 4 MiB
  EXPECT_FALSE(device->map(*base + 2 * page, 3 * page)) << "10 MiB under a 9 MiB cap";
  EXPECT_FALSE(device->admit(6 * kMiB)) << "4 + 6 MiB > 9 MiB";
  EXPECT_FALSE(device->map(*base + 2 * page, 3 * page)) << "nothing admitted: the cap holds";
  ASSERT_TRUE(device->admit(4 * kMiB));
  EXPECT_TRUE(device->map(*base + 2 * page, 3 * page)) << "admitted: its whole pages may end at 10 MiB";
  EXPECT_EQ(device->counters().reserved_bytes, 10 * kMiB);
  EXPECT_FALSE(device->map(*base + 5 * page, page)) << "what was admitted is mapped: the cap holds again";
  EXPECT_EQ(device->counters().failed_calls, 3u);
  device->unmap(*base, 5 * page);
  device->release_address(*base, 8 * page);
  EXPECT_EQ(device->counters().reserved_bytes, 0u);
}

// Page calls outside the contract are the caller's bug: a logic_error, with the counters and the
// backed ranges as they were.
TEST_P(DeviceContract, PageCallsOutsideTheContractAreLogicErrorsAndChangeNothing) {
  const uint64_t page = device_->granularity();
  const std::optional<uint64_t> base = device_->reserve_address(4 * page);
  if (!base) GTEST_SKIP() << "no virtual memory management";
  ASSERT_TRUE(device_->map(*base, 2 * page));
  const DeviceCounters before = device_->counters();
  const auto ranges = device_->backed_ranges();
  EXPECT_THROW(device_->map(*base + page, page), std::logic_error) << "mapped already";
  EXPECT_THROW(device_->map(*base + 4 * page, page), std::logic_error) << "outside the reservation";
  EXPECT_THROW(device_->map(*base + 2 * page + 512, page), std::logic_error) << "not a whole page";
  EXPECT_THROW(device_->map(*base + 2 * page, 0), std::logic_error) << "no page";
  EXPECT_THROW(device_->unmap(*base + 2 * page, page), std::logic_error) << "not mapped";
  EXPECT_THROW(device_->unmap(*base + page, 2 * page), std::logic_error) << "half mapped";
  EXPECT_THROW(device_->release_address(*base, 4 * page), std::logic_error) << "pages still mapped";
  EXPECT_THROW(device_->release_address(*base + page, 3 * page), std::logic_error) << "not a reservation";
  EXPECT_EQ(device_->counters(), before);
  EXPECT_EQ(device_->backed_ranges(), ranges);
  device_->unmap(*base, 2 * page);
  device_->release_address(*base, 4 * page);
  EXPECT_EQ(device_->counters().reserved_bytes, 0u);
}

INSTANTIATE_TEST_SUITE_P(AllDevices, DeviceContract, ::testing::ValuesIn(all_cases()), case_name);

// free_held(): for a caller that holds what it frees, the device's false is a bug: a logic_error
// that names the address, and the device is left as it was.
TEST(FreeHeld, ARefusedFreeIsALogicErrorNamingTheAddress) {
  bench::BumpDevice device;
  const std::optional<uint64_t> address = device.malloc(kMiB);
  ASSERT_TRUE(address);
  free_held(device, *address);
  const DeviceCounters after = device.counters();
  EXPECT_EQ(after.free_calls, 1u);
  try {
    free_held(device, *address);
    ADD_FAILURE() << "a second free_held of the same address did not throw";
  } catch (const std::logic_error& e) {
    std::ostringstream hex;
    hex << "0x" << std::hex << *address;
    EXPECT_NE(std::string(e.what()).find(hex.str()), std::string::npos) << e.what();
  }
  EXPECT_EQ(device.counters(), after);
}

}  // namespace
}  // namespace memreplay
