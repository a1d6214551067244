// passthrough: no caching at all. Every allocation is its own device malloc of exactly the
// requested bytes, every free a device free: the baseline a caching allocator is compared with
// (what PYTORCH_NO_CUDA_MEMORY_CACHING=1 does).
#include <unordered_map>

#include "policies/registry.h"

namespace memreplay {
namespace {

class PassthroughPolicy final : public Policy {
 public:
  explicit PassthroughPolicy(Device& device) : device_(device) {}

  std::optional<Block> allocate(uint64_t bytes, StreamId) override {
    const auto address = device_.malloc(bytes);
    if (!address) return std::nullopt;
    sizes_[*address] = bytes;
    return Block{*address, bytes};
  }

  void free(uint64_t address) noexcept override {
    if (sizes_.erase(address) != 0) device_.free(address);
  }

 private:
  Device& device_;
  std::unordered_map<uint64_t, uint64_t> sizes_;  // live block address -> bytes
};

std::unique_ptr<Policy> make_passthrough(std::string_view options, Device& device) {
  if (!options.empty())
    throw PolicySpecError("policy 'passthrough' takes no options (got '" + std::string(options) + "')");
  return std::make_unique<PassthroughPolicy>(device);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(passthrough, "passthrough",
                          "one device malloc per allocation, no caching (PYTORCH_NO_CUDA_MEMORY_CACHING)",
                          "(no options)", make_passthrough);

}  // namespace memreplay
