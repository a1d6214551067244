// passthrough: no caching at all. Every allocation is its own device malloc of exactly the
// requested bytes, every free a device free: the baseline a caching allocator is compared with
// (what PYTORCH_NO_CUDA_MEMORY_CACHING=1 does).
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
    return Block{*address, bytes};
  }

  // The device already knows every live block: its false for an address it never handed out (or
  // took back already), with nothing changed, is the contract's false. A set of our own beside it
  // cost a sixth of a replay's instructions.
  bool do_free(uint64_t address, StreamId) override { return device_.free(address); }

  Device& device_;
};

std::unique_ptr<Policy> make_passthrough(std::string_view options, Device& device) {
  detail::PolicyOptions("passthrough", options, {});  // refuses any option
  return std::make_unique<PassthroughPolicy>(device);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(
    passthrough, .name = "passthrough",
    .description = "one device malloc per allocation, no caching (PYTORCH_NO_CUDA_MEMORY_CACHING)",
    .options_help = "(no options)", .factory = make_passthrough);

}  // namespace memreplay
