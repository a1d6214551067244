#include "policies/plugin/plugin_policy.h"

#include <cstdio>
#include <exception>
#include <optional>

#include <absl/container/btree_map.h>
#include <absl/container/btree_set.h>
#include <absl/container/flat_hash_map.h>

#include "policies/registry.h"

namespace memreplay {
namespace {

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// The device as the plugin sees it: forwards to the Device, refuses calls on memory the plugin
// does not hold and remembers the first such fault (nothing may throw across the C boundary).
class DeviceBridge {
 public:
  DeviceBridge(Device& device, std::string policy) : device_(device), policy_(std::move(policy)) {
    api_ = memreplay_device_api{this,
                                &malloc_cb,
                                &free_cb,
                                &reserve_cb,
                                &release_cb,
                                &map_cb,
                                &unmap_cb,
                                device.granularity(),
                                device.total_memory(),
                                device.capacity().value_or(0)};
  }
  const memreplay_device_api* api() const { return &api_; }
  // Throws the first fault since the last call, as a PolicyContractError.
  void check() {
    if (fault_.empty()) return;
    std::string fault = std::move(fault_);
    fault_.clear();
    throw PolicyContractError(fault);
  }

 private:
  static DeviceBridge& self(void* context) { return *static_cast<DeviceBridge*>(context); }
  void fail(const std::string& what) {
    if (fault_.empty()) fault_ = "plugin policy '" + policy_ + "' " + what;
  }
  template <class Call>
  void guarded(Call call) noexcept {
    try {
      call();
    } catch (const std::exception& e) {
      fail(std::string("made a device call that failed: ") + e.what());
    }
  }

  // cudaMalloc and cuMemAddressReserve: a request of 0 bytes is the plugin's fault; what the
  // device grants is entered in `held`, so that its free or release can be checked.
  template <class Get, class Held>
  int acquire(uint64_t bytes, uint64_t* address, const char* zero_request, Get get, Held& held) noexcept {
    int result = 1;
    guarded([&] {
      if (bytes == 0) return fail(zero_request);
      if (const std::optional<uint64_t> got = get()) {
        held.emplace(*got, bytes);
        *address = *got;
        result = 0;
      }
    });
    return result;
  }
  static int malloc_cb(void* context, uint64_t bytes, uint64_t* address) noexcept {
    DeviceBridge& bridge = self(context);
    return bridge.acquire(
        bytes, address, "asked the device for 0 bytes", [&] { return bridge.device_.malloc(bytes); }, bridge.mallocs_);
  }
  static void free_cb(void* context, uint64_t address) noexcept {
    DeviceBridge& bridge = self(context);
    bridge.guarded([&] {
      if (bridge.mallocs_.erase(address) == 0)
        return bridge.fail("freed device memory at " + hex(address) + " that it does not hold (freed twice?)");
      free_held(bridge.device_, address);
    });
  }
  static int reserve_cb(void* context, uint64_t bytes, uint64_t* address) noexcept {
    DeviceBridge& bridge = self(context);
    return bridge.acquire(
        bytes, address, "reserved 0 bytes of address space", [&] { return bridge.device_.reserve_address(bytes); },
        bridge.reservations_);
  }
  static void release_cb(void* context, uint64_t address, uint64_t bytes) noexcept {
    DeviceBridge& bridge = self(context);
    bridge.guarded([&] {
      const auto it = bridge.reservations_.find(address);
      if (it == bridge.reservations_.end() || it->second != bytes)
        return bridge.fail("released address space at " + hex(address) + " that it did not reserve");
      const auto page = bridge.pages_.lower_bound(address);
      if (page != bridge.pages_.end() && *page < address + bytes)
        return bridge.fail("released address space at " + hex(address) + " with pages still mapped");
      bridge.reservations_.erase(it);
      bridge.device_.release_address(address, bytes);
    });
  }
  // Whole pages inside one reservation of the plugin's.
  bool pages_ok(uint64_t address, uint64_t bytes) const {
    const uint64_t page = device_.granularity();
    if (bytes == 0 || address % page != 0 || bytes % page != 0) return false;
    auto it = reservations_.upper_bound(address);
    if (it == reservations_.begin()) return false;
    --it;
    return address + bytes <= it->first + it->second;
  }
  static int map_cb(void* context, uint64_t address, uint64_t bytes) noexcept {
    DeviceBridge& bridge = self(context);
    int result = 1;
    bridge.guarded([&] {
      if (!bridge.pages_ok(address, bytes))
        return bridge.fail("mapped [" + hex(address) + ", +" + std::to_string(bytes) +
                           ") outside its reservations or not in whole pages");
      const uint64_t page = bridge.device_.granularity();
      for (uint64_t p = address; p < address + bytes; p += page)
        if (bridge.pages_.contains(p)) return bridge.fail("mapped the page at " + hex(p) + " twice");
      if (!bridge.device_.map(address, bytes)) return;
      for (uint64_t p = address; p < address + bytes; p += page) bridge.pages_.insert(p);
      result = 0;
    });
    return result;
  }
  static void unmap_cb(void* context, uint64_t address, uint64_t bytes) noexcept {
    DeviceBridge& bridge = self(context);
    bridge.guarded([&] {
      const uint64_t page = bridge.device_.granularity();
      if (!bridge.pages_ok(address, bytes)) return bridge.fail("unmapped a range that is not whole pages it reserved");
      for (uint64_t p = address; p < address + bytes; p += page)
        if (!bridge.pages_.contains(p)) return bridge.fail("unmapped the page at " + hex(p) + ", which is not mapped");
      for (uint64_t p = address; p < address + bytes; p += page) bridge.pages_.erase(p);
      bridge.device_.unmap(address, bytes);
    });
  }

  Device& device_;
  std::string policy_;
  memreplay_device_api api_;
  std::string fault_;
  absl::flat_hash_map<uint64_t, uint64_t> mallocs_;  // address -> bytes
  absl::btree_map<uint64_t, uint64_t> reservations_;  // start -> bytes
  absl::btree_set<uint64_t> pages_;  // mapped pages
};

class PluginPolicy final : public Policy {
 public:
  PluginPolicy(const memreplay_policy_plugin& table, std::string_view options, Device& device)
      : table_(table), bridge_(device, table.name) {
    char error[512] = "";
    const std::string text(options);
    state_ = table_.create(text.c_str(), bridge_.api(), error, sizeof error);
    bridge_.check();
    if (state_ == nullptr)
      throw PolicySpecError(error[0] ? std::string(error)
                                     : "plugin policy '" + std::string(table_.name) + "' refused its options");
  }
  ~PluginPolicy() override { table_.destroy(state_); }

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    uint64_t address = 0;
    uint64_t size = 0;
    const int result = table_.allocate(state_, bytes, stream, &address, &size);
    bridge_.check();
    if (result == MEMREPLAY_PLUGIN_OUT_OF_MEMORY) return std::nullopt;
    if (result != MEMREPLAY_PLUGIN_OK) reported_error("allocate of " + std::to_string(bytes) + " bytes", result);
    if (size < bytes)
      fault("returned a block of " + std::to_string(size) + " bytes for a request of " + std::to_string(bytes));
    // No overlap with the live neighbours in address order.
    auto next = live_.lower_bound(address);
    if (next != live_.end() && next->first < address + size)
      fault("returned [" + hex(address) + ", +" + std::to_string(size) + "), which overlaps the live block at " +
            hex(next->first));
    if (next != live_.begin() && std::prev(next)->first + std::prev(next)->second > address)
      fault("returned [" + hex(address) + ", +" + std::to_string(size) + "), which overlaps the live block at " +
            hex(std::prev(next)->first));
    live_.emplace_hint(next, address, size);
    return Block{address, size};
  }

  bool do_free(uint64_t address, StreamId stream) override {
    const auto it = live_.find(address);
    if (it == live_.end()) return false;  // never reaches the plugin
    live_.erase(it);
    const int result = table_.free(state_, address, stream);
    bridge_.check();
    if (result != MEMREPLAY_PLUGIN_OK) reported_error("free of " + hex(address), result);
    return true;
  }

  void do_empty_cache() override {
    if (table_.empty_cache != nullptr) table_.empty_cache(state_);
    bridge_.check();
  }

  [[noreturn]] void fault(const std::string& what) const {
    throw PolicyContractError("plugin policy '" + std::string(table_.name) + "' " + what);
  }
  [[noreturn]] void reported_error(const std::string& call, int result) const {
    const char* message = table_.last_error != nullptr ? table_.last_error(state_) : nullptr;
    fault("reported an error on the " + call +
          (result != MEMREPLAY_PLUGIN_ERROR ? " (result " + std::to_string(result) + ")" : "") + ": " +
          (message != nullptr && message[0] != '\0' ? message : "no message"));
  }

  const memreplay_policy_plugin& table_;
  DeviceBridge bridge_;
  void* state_ = nullptr;
  absl::btree_map<uint64_t, uint64_t> live_;  // blocks the plugin handed out: address -> size
};

}  // namespace

std::unique_ptr<Policy> make_plugin_policy(const memreplay_policy_plugin& table, std::string_view options,
                                           Device& device) {
  return std::make_unique<PluginPolicy>(table, options, device);
}

}  // namespace memreplay
