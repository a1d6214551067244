// The Device contract for a refused free (policies/device.h), over every registered device ("sim",
// "cuda" where a GPU is visible, the tests' "recording-sim") and the benchmarks' BumpDevice:
// free() of an address that is not a live malloc() (inside one, a pool allocation, a reservation,
// one never handed out, one freed already) returns false with the counters and backed ranges
// unchanged, and so does pool_free_async() of an address that is not a live pool allocation;
// free_held(), for a caller that holds what it frees, turns that false into a logic_error.
// A new device gets these tests by registering.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
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
  std::function<std::unique_ptr<Device>()> make;  // throws InputError where the device cannot run
  bool follows_a_recorded_malloc = false;  // the malloc lands where recorded_malloc() put it
  friend void PrintTo(const DeviceCase& c, std::ostream* os) { *os << c.name; }
};

std::vector<DeviceCase> all_cases() {
  std::vector<DeviceCase> cases;
  for (const DeviceInfoEntry& entry : DeviceRegistry::instance().devices()) {
    const std::string name = entry.name;
    const auto make = [name](bool follow) {
      return [name, follow] {
        DeviceRequest request;
        request.follow_recorded_placement = follow;
        return DeviceRegistry::instance().create(name, request);
      };
    };
    cases.push_back({name, make(false)});
    if (follows_recorded_placement(name)) cases.push_back({name + "_following_the_record", make(true), true});
  }
  cases.push_back({"bench_bump", [] { return std::make_unique<bench::BumpDevice>(); }});
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
      device_ = GetParam().make();
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
