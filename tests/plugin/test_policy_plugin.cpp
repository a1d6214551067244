// A policy plugin as a later loader will find them: a shared object linked against
// libmemreplay_policies.so that registers itself when it is loaded. The contract suite dlopens it
// (tests/policy_contract_test.cpp) and checks that it landed in the executables' one registry.
//
// The policy, exact-size caching: requests round up to 4 KiB; a freed block waits for the next
// request of its size; when the device has no room, or at empty_cache, the cache goes back.
#include <map>
#include <unordered_map>

#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace {

using namespace memreplay;

class ExactSizeCachePolicy final : public Policy {
 public:
  explicit ExactSizeCachePolicy(Device& device) : device_(device) {}

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId) override {
    const uint64_t size = (bytes + 4095) / 4096 * 4096;
    std::optional<uint64_t> address;
    if (const auto hit = cached_.find(size); hit != cached_.end()) {
      address = hit->second;
      cached_.erase(hit);
    } else if (address = device_.malloc(size); !address) {
      do_empty_cache();
      address = device_.malloc(size);
    }
    if (!address) return std::nullopt;
    live_.emplace(*address, size);
    return Block{*address, size};
  }

  bool do_free(uint64_t address, StreamId) override {
    const auto node = live_.extract(address);
    if (node.empty()) return false;
    cached_.emplace(node.mapped(), address);
    return true;
  }

  void do_empty_cache() override {
    for (const auto& [size, address] : cached_) free_held(device_, address);
    cached_.clear();
  }

  Device& device_;
  std::unordered_map<uint64_t, uint64_t> live_;  // address -> size
  std::multimap<uint64_t, uint64_t> cached_;  // size -> address, oldest first
};

}  // namespace

MEMREPLAY_REGISTER_POLICY(
    test_plugin_exact_size, .name = "test_plugin_exact_size",
    .description = "test plugin: exact-size caching of 4 KiB-rounded blocks", .options_help = "(no options)",
    .factory = [](std::string_view options, Device& device) -> std::unique_ptr<Policy> {
      detail::PolicyOptions("test_plugin_exact_size", options, {});
      return std::make_unique<ExactSizeCachePolicy>(device);
    });
