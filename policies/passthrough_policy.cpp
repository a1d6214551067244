// passthrough: no caching at all. Every allocation is its own device malloc of exactly the
// requested bytes, every free a device free: the baseline a caching allocator is compared with
// (what PYTORCH_NO_CUDA_MEMORY_CACHING=1 does).
#include <absl/container/flat_hash_set.h>

#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

class PassthroughPolicy final : public Policy {
 public:
  explicit PassthroughPolicy(Device& device) : device_(device) {}

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId) override {
    const auto address = device_.malloc(bytes);
    if (!address) return std::nullopt;
    live_.insert(*address);
    return Block{*address, bytes};
  }

  bool do_free(uint64_t address, StreamId) override {
    if (live_.erase(address) == 0) return false;
    device_.free(address);
    return true;
  }

  Device& device_;
  // Live block addresses: the contract's false for a foreign address (the device would throw).
  absl::flat_hash_set<uint64_t> live_;
};

std::unique_ptr<Policy> make_passthrough(std::string_view options, Device& device) {
  detail::PolicyOptions("passthrough", options, {});  // refuses any option
  return std::make_unique<PassthroughPolicy>(device);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(passthrough, .name = "passthrough",
                          .description = "one device malloc per allocation, no caching (PYTORCH_NO_CUDA_MEMORY_CACHING)",
                          .options_help = "(no options)", .factory = make_passthrough);

}  // namespace memreplay
