#include "policies/plugin/plugin_policy.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include <absl/container/btree_map.h>

#include "base/text.h"
#include "policies/detail/interval_set.h"
#include "policies/plugin/plugin_guard.h"
#include "policies/registry.h"

namespace memreplay {
namespace {

// The most of a plugin's message memreplay reads (a plugin may return an unterminated buffer).
constexpr size_t kMaxMessageBytes = 1024;

std::string hex(uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string range_text(uint64_t address, uint64_t size) {
  return "[" + hex(address) + ", +" + std::to_string(size) + ")";
}

// address -> size, in address order: the plugin's live blocks, its mallocs.
using Ranges = absl::btree_map<uint64_t, uint64_t>;

// The first range of `ranges` that overlaps [start, end), or ranges.end().
Ranges::const_iterator first_overlap(const Ranges& ranges, uint64_t start, uint64_t end) {
  auto next = ranges.lower_bound(start);
  if (next != ranges.begin() && std::prev(next)->first + std::prev(next)->second > start) return std::prev(next);
  if (next != ranges.end() && next->first < end) return next;
  return ranges.end();
}

// The device as the plugin sees it: forwards to the Device, refuses calls on memory the plugin
// does not hold (or that its live blocks still lie in) and remembers the first such fault (nothing
// may throw across the C boundary). Every check the Device base would make is made here first,
// so that a plugin's mistake is its fault, never the device's logic_error.
class DeviceBridge {
 public:
  DeviceBridge(Device& device, const std::string& who, const Ranges& live_blocks)
      : device_(device), who_(who), live_blocks_(live_blocks) {
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
  // Whether [address, address + size) lies in one malloc of the plugin's or in its mapped pages.
  bool holds(uint64_t address, uint64_t size) const {
    if (pages_.holds(address, address + size)) return true;
    auto malloc = mallocs_.upper_bound(address);
    if (malloc == mallocs_.begin()) return false;
    --malloc;
    return address + size <= malloc->first + malloc->second;
  }

 private:
  static DeviceBridge& self(void* context) { return *static_cast<DeviceBridge*>(context); }
  void fail(const std::string& what) {
    if (fault_.empty()) fault_ = who_ + " " + what;
  }
  template <class Call>
  void guarded(Call call) noexcept {
    try {
      call();
    } catch (const std::exception& e) {
      fail(std::string("made a device call that failed: ") + e.what());
    }
  }
  // A fault when a live block of the plugin's lies in [address, +bytes), which it gives back.
  bool under_live_block(const char* what, uint64_t address, uint64_t bytes) {
    const auto block = first_overlap(live_blocks_, address, address + bytes);
    if (block == live_blocks_.end()) return false;
    fail(std::string(what) + " " + range_text(address, bytes) + " under its live block at " + hex(block->first));
    return true;
  }

  // malloc_cb and reserve_cb: `take` asks the device for `bytes`; what it gets is held in `held`
  // and handed out at `address` (0). A fault for 0 bytes; 1 when the device has none to give.
  template <class Take>
  static int take_cb(void* context, uint64_t bytes, uint64_t* address, const char* zero_bytes_fault,
                     Ranges DeviceBridge::*held, Take take) noexcept {
    DeviceBridge& bridge = self(context);
    int result = 1;
    bridge.guarded([&] {
      if (bytes == 0) return bridge.fail(zero_bytes_fault);
      if (const std::optional<uint64_t> got = take(bridge.device_, bytes)) {
        (bridge.*held).emplace(*got, bytes);
        *address = *got;
        result = 0;
      }
    });
    return result;
  }
  static int malloc_cb(void* context, uint64_t bytes, uint64_t* address) noexcept {
    return take_cb(context, bytes, address, "asked the device for 0 bytes", &DeviceBridge::mallocs_,
                   [](Device& device, uint64_t n) { return device.malloc(n); });
  }
  static void free_cb(void* context, uint64_t address) noexcept {
    DeviceBridge& bridge = self(context);
    bridge.guarded([&] {
      const auto it = bridge.mallocs_.find(address);
      if (it == bridge.mallocs_.end())
        return bridge.fail("freed device memory at " + hex(address) + " that it does not hold (freed twice?)");
      if (bridge.under_live_block("freed device memory", address, it->second)) return;
      bridge.mallocs_.erase(it);
      free_held(bridge.device_, address);
    });
  }
  static int reserve_cb(void* context, uint64_t bytes, uint64_t* address) noexcept {
    return take_cb(context, bytes, address, "reserved 0 bytes of address space", &DeviceBridge::reservations_,
                   [](Device& device, uint64_t n) { return device.reserve_address(n); });
  }
  static void release_cb(void* context, uint64_t address, uint64_t bytes) noexcept {
    DeviceBridge& bridge = self(context);
    bridge.guarded([&] {
      const auto it = bridge.reservations_.find(address);
      if (it == bridge.reservations_.end() || it->second != bytes)
        return bridge.fail("released address space at " + hex(address) + " that it did not reserve");
      const auto page = bridge.pages_.lower_bound(address);
      if ((page != bridge.pages_.end() && page->first < address + bytes) ||
          (page != bridge.pages_.begin() && std::prev(page)->second > address))
        return bridge.fail("released address space at " + hex(address) + " with pages still mapped");
      bridge.reservations_.erase(it);
      bridge.device_.release_address(address, bytes);
    });
  }
  // Whole pages inside one reservation of the plugin's.
  bool pages_ok(uint64_t address, uint64_t bytes) const {
    const uint64_t page = device_.granularity();
    if (bytes == 0 || address % page != 0 || bytes % page != 0 || bytes > UINT64_MAX - address) return false;
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
        return bridge.fail("mapped " + range_text(address, bytes) +
                           ", which is outside its reservations or not in whole pages");
      if (!bridge.pages_.insert(address, address + bytes))
        return bridge.fail("mapped " + range_text(address, bytes) + ", where pages are mapped already");
      if (!bridge.device_.map(address, bytes)) {
        bridge.pages_.erase(address, address + bytes);
        return;
      }
      result = 0;
    });
    return result;
  }
  static void unmap_cb(void* context, uint64_t address, uint64_t bytes) noexcept {
    DeviceBridge& bridge = self(context);
    bridge.guarded([&] {
      if (!bridge.pages_ok(address, bytes)) return bridge.fail("unmapped a range that is not whole pages it reserved");
      if (!bridge.pages_.holds(address, address + bytes))
        return bridge.fail("unmapped " + range_text(address, bytes) + ", which is not all mapped");
      if (bridge.under_live_block("unmapped", address, bytes)) return;
      bridge.pages_.erase(address, address + bytes);
      bridge.device_.unmap(address, bytes);
    });
  }

  Device& device_;
  const std::string& who_;
  const Ranges& live_blocks_;
  memreplay_device_api api_;
  std::string fault_;
  Ranges mallocs_;  // address -> bytes
  Ranges reservations_;  // start -> bytes
  detail::IntervalSet pages_;  // mapped pages
};

// A plugin's text, read up to `limit` bytes (it may lack its terminator) as one printable line.
std::string plugin_text(const char* text, size_t limit) {
  if (text == nullptr) return "";
  return escape_unprintable(std::string_view(text, strnlen(text, limit)));
}

class PluginPolicy final : public Policy {
 public:
  PluginPolicy(const memreplay_policy_plugin& table, std::string_view options, Device& device)
      : table_(table), who_("plugin policy '" + std::string(table.name) + "'"), bridge_(device, who_, live_) {
    char error[512] = "";
    const std::string text(options);
    {
      const PluginCallScope call(who_.c_str(), "create call");
      state_ = table_.create(text.c_str(), bridge_.api(), error, sizeof error);
    }
    try {
      bridge_.check();
    } catch (...) {  // a fault while it made its state: no instance, nothing left behind
      if (state_ != nullptr) {
        const PluginCallScope call(who_.c_str(), "destroy call");
        table_.destroy(state_);
      }
      throw;
    }
    if (state_ == nullptr) {
      const std::string message = plugin_text(error, sizeof error);
      throw PolicySpecError(!message.empty() ? message : who_ + " refused its options");
    }
  }
  ~PluginPolicy() override {
    const PluginCallScope call(who_.c_str(), "destroy call");
    table_.destroy(state_);
  }

 private:
  std::optional<Block> do_allocate(uint64_t bytes, StreamId stream) override {
    uint64_t address = 0;
    uint64_t size = 0;
    int result = 0;
    {
      const PluginCallScope call(who_.c_str(), "allocate call");
      result = table_.allocate(state_, bytes, stream, &address, &size);
    }
    bridge_.check();
    if (result == MEMREPLAY_PLUGIN_OUT_OF_MEMORY) return std::nullopt;
    if (result != MEMREPLAY_PLUGIN_OK) reported_error("allocate of " + std::to_string(bytes) + " bytes", result);
    check_block(bytes, address, size);
    live_.emplace(address, size);
    return Block{address, size};
  }

  // A block must hold the request, fit in the address space, overlap no live block and lie in
  // device memory the plugin holds.
  void check_block(uint64_t bytes, uint64_t address, uint64_t size) const {
    if (size < bytes)
      fault("returned a block of " + std::to_string(size) + " bytes for a request of " + std::to_string(bytes));
    if (size > kMaxRequestBytes || address > UINT64_MAX - size)
      fault("returned a block of " + std::to_string(size) + " bytes at " + hex(address) +
            " (past 2^48 bytes or the end of the address space)");
    if (const auto other = first_overlap(live_, address, address + size); other != live_.end())
      fault("returned " + range_text(address, size) + ", which overlaps the live block at " + hex(other->first));
    if (!bridge_.holds(address, size))
      fault("returned " + range_text(address, size) +
            ", which is not in device memory it holds (one malloc, or mapped pages)");
  }

  bool do_free(uint64_t address, StreamId stream) override {
    const auto it = live_.find(address);
    if (it == live_.end()) return false;  // never reaches the plugin
    live_.erase(it);
    int result = 0;
    {
      const PluginCallScope call(who_.c_str(), "free call");
      result = table_.free(state_, address, stream);
    }
    bridge_.check();
    if (result != MEMREPLAY_PLUGIN_OK) reported_error("free of " + hex(address), result);
    return true;
  }

  void do_empty_cache() override {
    if (table_.empty_cache != nullptr) {
      const PluginCallScope call(who_.c_str(), "empty_cache call");
      table_.empty_cache(state_);
    }
    bridge_.check();
  }

  [[noreturn]] void fault(const std::string& what) const { throw PolicyContractError(who_ + " " + what); }
  [[noreturn]] void reported_error(const std::string& call, int result) const {
    std::string message;
    if (table_.last_error != nullptr) {
      const PluginCallScope scope(who_.c_str(), "last_error call");
      message = plugin_text(table_.last_error(state_), kMaxMessageBytes);
    }
    fault("reported an error on the " + call +
          (result != MEMREPLAY_PLUGIN_ERROR ? " (result " + std::to_string(result) + ")" : "") + ": " +
          (!message.empty() ? message : "no message"));
  }

  const memreplay_policy_plugin& table_;
  const std::string who_;  // "plugin policy 'NAME'"
  Ranges live_;  // blocks the plugin handed out: address -> size
  DeviceBridge bridge_;
  void* state_ = nullptr;
};

}  // namespace

std::unique_ptr<Policy> make_plugin_policy(const memreplay_policy_plugin& table, std::string_view options,
                                           Device& device) {
  return std::make_unique<PluginPolicy>(table, options, device);
}

}  // namespace memreplay
