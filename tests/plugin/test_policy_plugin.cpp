// A policy plugin as a later loader will find them: a shared object linked against
// libmemreplay_policies.so that registers itself when it is loaded. The contract suite dlopens it
// (tests/policy_contract_test.cpp) and checks that it landed in the executables' one registry.
// The policy: one device malloc per request, rounded up to 4 KiB pages.
#include <unordered_map>

#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace {

using namespace memreplay;

class PagePolicy final : public Policy {
 public:
  explicit PagePolicy(Device& device) : device_(device) {}

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId) override {
    const uint64_t size = (bytes + 4095) / 4096 * 4096;
    const auto address = device_.malloc(size);
    if (!address) return std::nullopt;
    live_.emplace(*address, size);
    return Block{*address, size};
  }
  bool do_free(uint64_t address, StreamId) override {
    if (live_.erase(address) == 0) return false;
    device_.free(address);
    return true;
  }

  Device& device_;
  std::unordered_map<uint64_t, uint64_t> live_;
};

}  // namespace

MEMREPLAY_REGISTER_POLICY(test_plugin_pages, .name = "test_plugin_pages",
                          .description = "test plugin: one device malloc per request, 4 KiB pages",
                          .options_help = "(no options)",
                          .factory = [](std::string_view options, Device& device) -> std::unique_ptr<Policy> {
                            detail::PolicyOptions("test_plugin_pages", options, {});
                            return std::make_unique<PagePolicy>(device);
                          });
