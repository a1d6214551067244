// Policy's public entry (policy.h), the parts kept out of line: the contract errors, which are
// cold, and the private pools served apart (policies/private_pools.h).
#include "policies/policy.h"

#include <cstdio>

#include "policies/private_pools.h"

namespace memreplay {

Policy::Policy() = default;
Policy::~Policy() = default;

void Policy::unknown_free(uint64_t address) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
  throw PolicyContractError(std::string("free of ") + hex +
                            ", which this policy did not hand out (or took back already)");
}

void Policy::serve_private_pools_apart(std::function<std::unique_ptr<Policy>(Device&)> make, Device& device) {
  make_for_pool_ = std::move(make);
  pool_device_ = &device;
  serves_pools_apart_ = true;
}

std::optional<Block> Policy::allocate_in_private_pool(uint64_t bytes, StreamId stream, PoolId pool, Capture capture) {
  if (private_pools_ == nullptr) private_pools_ = std::make_unique<detail::PrivatePools>(make_for_pool_, *pool_device_);
  return private_pools_->allocate(bytes, stream, pool, capture);
}

bool Policy::free_in_private_pool(uint64_t address, StreamId stream) { return private_pools_->free(address, stream); }

void Policy::release_private_pool(PoolId pool) {
  if (private_pools_ != nullptr) private_pools_->release(pool);
}

std::optional<uint64_t> Policy::adopt_segment_in_private_pool(uint64_t bytes, StreamId stream, PoolId pool) {
  if (private_pools_ == nullptr) private_pools_ = std::make_unique<detail::PrivatePools>(make_for_pool_, *pool_device_);
  return private_pools_->adopt_segment(bytes, stream, pool);
}

std::optional<std::optional<Block>> Policy::adopt_block_in_private_pool(uint64_t address, uint64_t size,
                                                                        uint64_t requested, StreamId stream) {
  return private_pools_->adopt_block(address, size, requested, stream);
}

void Policy::add_private_pool_stats(PolicyStats& stats) const { private_pools_->add_stats(stats); }

}  // namespace memreplay
