// Which PyTorch release a policy models, the one comparison every trace command warns with
// (policies/torch_version.h), and the 2.11 rule that 2.13 changed, on both sides
// (docs/pytorch-versions.md).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "policies/pytorch/alloc_config.h"
#include "policies/pytorch/caching_allocator_policy.h"
#include "policies/registry.h"
#include "policies/torch_version.h"
#include "replayer/sim/sim_device.h"

namespace memreplay {
namespace {

constexpr uint64_t MiB = 1ull << 20;

TEST(TorchVersion, ParsesTheMajorAndMinorOfWhatTorchSays) {
  EXPECT_EQ(parse_torch_version("2.13.0+cu128"), (TorchVersion{2, 13}));
  EXPECT_EQ(parse_torch_version("2.15.0a0+git0123abc"), (TorchVersion{2, 15}));
  EXPECT_EQ(parse_torch_version("2.11"), (TorchVersion{2, 11}));
  EXPECT_EQ(parse_torch_version("10.2.1"), (TorchVersion{10, 2}));
  for (const char* bad : {"", "2", "2.", "v2.13.0", "two.13", ".13", "2.x"})
    EXPECT_EQ(parse_torch_version(bad), std::nullopt) << bad;
  EXPECT_EQ(to_string(TorchVersion{2, 13}), "2.13");
  EXPECT_LT((TorchVersion{2, 9}), (TorchVersion{2, 11}));
}

TEST(TorchVersion, ThePytorchPolicyStatesTheReleaseItModels) {
  EXPECT_EQ(models_torch_version("pytorch"), "2.11");
  EXPECT_EQ(models_torch_version("pytorch:expandable_segments:True"), "2.11");
  EXPECT_EQ(PolicyRegistry::instance().find("pytorch")->models_torch_version, "2.11");
  EXPECT_EQ(models_torch_version("bfc"), "");  // models no PyTorch release
  EXPECT_EQ(models_torch_version("no-such-policy"), "");
}

TEST(TorchVersion, NothingToSayForTheSameReleaseAnUnknownOneOrAPolicyOfNone) {
  EXPECT_EQ(torch_version_mismatch("2.11.0+cu130", "pytorch"), std::nullopt);  // patch releases agree
  EXPECT_EQ(torch_version_mismatch("2.11.1", "pytorch:max_split_size_mb:64"), std::nullopt);
  EXPECT_EQ(torch_version_mismatch("2.13.0", "bfc"), std::nullopt);
  EXPECT_EQ(torch_version_mismatch("2.13.0", "rmm_pool"), std::nullopt);
  EXPECT_EQ(torch_version_mismatch("", "pytorch"), std::nullopt);
  EXPECT_EQ(torch_version_mismatch("unknown", "pytorch"), std::nullopt);
  EXPECT_EQ(torch_version_mismatch("2.13.0", "no-such-policy"), std::nullopt);
}

TEST(TorchVersion, AnotherReleaseIsNamedWithTheOneModelled) {
  const auto message = torch_version_mismatch("2.13.0+cu128", "pytorch:expandable_segments:True");
  ASSERT_TRUE(message.has_value());
  EXPECT_NE(message->find("torch 2.13.0+cu128"), std::string::npos) << *message;
  EXPECT_NE(message->find("'pytorch' models PyTorch 2.11"), std::string::npos) << *message;
  // pytorch@2.13 models it (from source), named without the spec's options.
  EXPECT_NE(message->find("--policy pytorch@2.13 models 2.13 (read from PyTorch's source"), std::string::npos)
      << *message;
  const auto newer = torch_version_mismatch("2.15.0", "pytorch");
  ASSERT_TRUE(newer.has_value());
  EXPECT_NE(newer->find("no policy models 2.15 (the newest modelled is pytorch@2.13)"), std::string::npos) << *newer;
  EXPECT_NE(message->find("docs/pytorch-versions.md"), std::string::npos) << *message;
  EXPECT_TRUE(torch_version_mismatch("2.9.1", "pytorch").has_value());  // older releases too
  // A header is input: what it says comes back as one short printable line.
  const auto hostile = torch_version_mismatch("2.13.0\n" + std::string(200, 'x'), "pytorch");
  ASSERT_TRUE(hostile.has_value());
  EXPECT_EQ(hostile->find('\n'), std::string::npos);
  EXPECT_NE(hostile->find("torch 2.13.0?xxx"), std::string::npos) << *hostile;
  EXPECT_LT(hostile->size(), 400u);
}

PolicyInfo policy(const std::string& name, const std::string& version) {
  PolicyInfo info;
  info.name = name;
  info.models_torch_version = version;
  return info;
}

// The warning points at the variant of the same family that models the trace's release (without
// the spec's options, which the user keeps), or names the newest there is. Over a constructed
// table, so that the rules hold whatever the registry holds.
TEST(TorchVersion, TheVariantThatModelsTheTracesReleaseIsNamed) {
  const std::vector<PolicyInfo> table = {policy("pytorch", "2.11"), policy("pytorch@2.13", "2.13"), policy("bfc", ""),
                                         policy("other@2.14", "2.14")};
  auto m = torch_version_mismatch("2.13.1", "pytorch:expandable_segments:True", table);
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->find("--policy pytorch@2.13 models 2.13 (read from PyTorch's source; no ground truth here)"),
            std::string::npos)
      << *m;

  m = torch_version_mismatch("2.11.0", "pytorch@2.13", table);
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->find("'pytorch@2.13' models PyTorch 2.13"), std::string::npos) << *m;
  EXPECT_NE(m->find("--policy pytorch models 2.11 (checked against real traces)"), std::string::npos) << *m;

  m = torch_version_mismatch("2.14.0", "pytorch", table);  // other@2.14 is another family
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->find("no policy models 2.14 (the newest modelled is pytorch@2.13)"), std::string::npos) << *m;

  m = torch_version_mismatch("2.14.0", "pytorch@2.13", table);  // already the newest: not named again
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->find("no policy models 2.14 (docs"), std::string::npos) << *m;

  EXPECT_EQ(torch_version_mismatch("2.13.0", "pytorch@2.13", table), std::nullopt);
  EXPECT_EQ(torch_version_mismatch("2.14.0", "bfc", table), std::nullopt);
}

// The rule 2.13 changed (pytorch/pytorch PR #175374, "Separate allocator behavior between user
// mempool and graph capture"): in 2.11 the last rung of malloc's retry chain,
// release_cached_blocks() && alloc_block(retry), is skipped while any pool scope is open, so an
// allocation in a private pool never frees the default pool's cached segments to make room; 2.13
// skips it only during a graph capture. `pytorch` keeps 2.11's rule, `pytorch@2.13` has 2.13's.
TEST(TorchVersionRules, In211APrivatePoolAllocationNeverReleasesTheCacheToRetry) {
  SimDevice::Options options;
  options.capacity = 40 * MiB;
  SimDevice device(options);
  pytorch::CachingAllocatorPolicy policy(pytorch::parse_alloc_config(""), device);
  const auto cached = policy.allocate(12 * MiB, 0);
  ASSERT_TRUE(cached.has_value());
  policy.free(cached->address, 0);  // a whole free 12 MiB segment stays cached in the default pool

  // 12 + 30 > 40: the default pool would release its cache and retry; pool 1 does not, even
  // where the trace says no capture was underway (a MemPool's scope: 2.11 skips it all the same).
  EXPECT_FALSE(policy.allocate_in_pool(30 * MiB, 0, 1, Capture::not_capturing).has_value());
  EXPECT_EQ(policy.stats().alloc_retries, 0u);
  EXPECT_EQ(device.counters().free_calls, 0u);
  EXPECT_EQ(device.counters().reserved_bytes, 12 * MiB);

  const auto in_default_pool = policy.allocate(30 * MiB, 0);
  ASSERT_TRUE(in_default_pool.has_value());
  EXPECT_EQ(policy.stats().alloc_retries, 1u);
  EXPECT_EQ(device.counters().free_calls, 1u);
}

// 2.13's side, the same sequence: a MemPool's allocation outside a capture releases the default
// pool's cached segment and retries (one alloc retry, one cudaFree); under a capture, or where the
// trace cannot say, the rung is skipped as in 2.11.
struct CachedThenPoolAllocation {
  bool served = false;
  uint64_t retries = 0, frees = 0, reserved = 0;
};
CachedThenPoolAllocation cached_then_pool_allocation(const std::string& policy_name, Capture capture) {
  SimDevice::Options options;
  options.capacity = 40 * MiB;
  SimDevice device(options);
  const auto policy = PolicyRegistry::instance().create(policy_name, device);
  const auto cached = policy->allocate(12 * MiB, 0);
  if (!cached) return {};
  policy->free(cached->address, 0);
  CachedThenPoolAllocation result;
  result.served = policy->allocate_in_pool(30 * MiB, 0, 1, capture).has_value();
  result.retries = policy->stats().alloc_retries;
  result.frees = device.counters().free_calls;
  result.reserved = device.counters().reserved_bytes;
  return result;
}

TEST(TorchVersionRules, In213AMemPoolAllocationOutsideACaptureReleasesTheCacheAndRetries) {
  const auto r = cached_then_pool_allocation("pytorch@2.13", Capture::not_capturing);
  EXPECT_TRUE(r.served);
  EXPECT_EQ(r.retries, 1u);
  EXPECT_EQ(r.frees, 1u);
  EXPECT_EQ(r.reserved, 30 * MiB);
}

TEST(TorchVersionRules, In213UnderACaptureOrWhereTheTraceCannotSayTheRungIsSkipped) {
  for (const Capture capture : {Capture::capturing, Capture::unknown}) {
    const auto r = cached_then_pool_allocation("pytorch@2.13", capture);
    EXPECT_FALSE(r.served);
    EXPECT_EQ(r.retries, 0u);
    EXPECT_EQ(r.frees, 0u);
    EXPECT_EQ(r.reserved, 12 * MiB);
  }
  // 2.11 skips it whatever the trace says.
  for (const Capture capture : {Capture::capturing, Capture::unknown, Capture::not_capturing})
    EXPECT_FALSE(cached_then_pool_allocation("pytorch", capture).served);
}

TEST(TorchVersionRules, TheVariantStatesItsReleaseAndTheTraceOfThatReleaseIsPointedAtIt) {
  const PolicyInfo* info = PolicyRegistry::instance().find("pytorch@2.13");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->models_torch_version, "2.13");
  EXPECT_TRUE(info->decides_by_capture);
  EXPECT_FALSE(PolicyRegistry::instance().find("pytorch")->decides_by_capture);
  EXPECT_EQ(torch_version_mismatch("2.13.1+cu130", "pytorch@2.13"), std::nullopt);
  const auto m = torch_version_mismatch("2.13.0+cu128", "pytorch:expandable_segments:True");
  ASSERT_TRUE(m.has_value());
  EXPECT_NE(m->find("--policy pytorch@2.13 models 2.13"), std::string::npos) << *m;
}

}  // namespace
}  // namespace memreplay
