// The plugin boundary (policies/plugin/plugin_policy.cpp) against a plugin whose every answer is
// fuzzed: which address and size allocate returns, which device calls it makes (malloc, free,
// reserve, map, unmap, release, with fuzzed arguments) and what each callback returns. A real
// replay (ReplaySession on a SimDevice, capped or not) drives it through a fuzzed sequence of
// allocations and frees. Every outcome must be a result or a clean error (InputError,
// PolicySpecError); a crash, a sanitizer report, any other exception, or a fault the bridge let
// through to the device (the Device base's logic_error, wrapped as "made a device call that
// failed") is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "policies/plugin/memreplay_policy_plugin.h"
#include "policies/plugin/plugin_policy.h"
#include "policies/registry.h"
#include "proto/event.h"
#include "proto/input_error.h"
#include "replayer/replay_session.h"
#include "replayer/sim/sim_device.h"

namespace {

// The fuzzer's bytes, read front to back; zeros once they run out.
class Script {
 public:
  Script(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  uint64_t number() {
    // Mostly small, sometimes any 64-bit value: sizes near 2^64 are the interesting edge.
    const uint8_t kind = byte();
    if (kind < 200) return kind;
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value = (value << 8) | byte();
    return value;
  }
  bool done() const { return at_ >= size_; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

Script* script = nullptr;  // the current input (the fuzzer is single-threaded)

struct FuzzedPlugin {
  memreplay_device_api device;
  std::vector<uint64_t> got;  // every address a device call returned, for answers near them
  uint64_t page = 0;
};

uint64_t near_something(FuzzedPlugin& p) {
  const uint8_t pick = script->byte();
  if (pick < 64 || p.got.empty()) return script->number() << 12;
  const uint64_t base = p.got[pick % p.got.size()];
  return base + (script->number() * 512) * (pick & 1 ? p.page / 512 : 1);
}

void device_calls(FuzzedPlugin& p) {
  for (uint8_t n = script->byte() % 4; n > 0; --n) {
    uint64_t address = 0;
    switch (script->byte() % 6) {
      case 0:
        if (p.device.malloc(p.device.context, script->number() * 4096 + script->byte(), &address) == 0)
          p.got.push_back(address);
        break;
      case 1: p.device.free(p.device.context, near_something(p)); break;
      case 2:
        if (p.device.reserve_address(p.device.context, (script->number() + 1) * p.page, &address) == 0)
          p.got.push_back(address);
        break;
      case 3: p.device.map(p.device.context, near_something(p), script->number() * p.page); break;
      case 4: p.device.unmap(p.device.context, near_something(p), script->number() * p.page); break;
      case 5: p.device.release_address(p.device.context, near_something(p), script->number() * p.page); break;
    }
  }
}

void* create(const char*, const memreplay_device_api* device, char* error, size_t error_size) {
  if (script->byte() == 0xff) {
    std::memset(error, 'e', error_size);  // refused, with no terminator
    return nullptr;
  }
  auto* p = new FuzzedPlugin{*device, {}, device->granularity};
  device_calls(*p);
  return p;
}

void destroy(void* p) { delete static_cast<FuzzedPlugin*>(p); }

int allocate(void* opaque, uint64_t bytes, uint64_t, uint64_t* address, uint64_t* size) {
  auto& p = *static_cast<FuzzedPlugin*>(opaque);
  device_calls(p);
  switch (script->byte() % 8) {
    case 0: return MEMREPLAY_PLUGIN_OUT_OF_MEMORY;
    case 1: return MEMREPLAY_PLUGIN_ERROR;
    case 2: return 7;  // no such result
    case 3: {  // an honest cudaMalloc
      if (p.device.malloc(p.device.context, bytes, address) != 0) return MEMREPLAY_PLUGIN_OUT_OF_MEMORY;
      p.got.push_back(*address);
      *size = bytes;
      return MEMREPLAY_PLUGIN_OK;
    }
    default:  // anything near what it got, of any size
      *address = near_something(p);
      *size = script->byte() < 128 ? bytes + script->number() : script->number();
      return MEMREPLAY_PLUGIN_OK;
  }
}

int free_block(void* opaque, uint64_t, uint64_t) {
  device_calls(*static_cast<FuzzedPlugin*>(opaque));
  return script->byte() < 240 ? MEMREPLAY_PLUGIN_OK : MEMREPLAY_PLUGIN_ERROR;
}

void empty_cache(void* opaque) { device_calls(*static_cast<FuzzedPlugin*>(opaque)); }

const char* last_error(void*) {
  // As long as memreplay reads (1024 bytes), unterminated, of any bytes (control bytes, not UTF-8).
  static char message[1024];
  std::memset(message, script->byte(), sizeof message);
  return message;
}

const memreplay_policy_plugin kTable = {MEMREPLAY_POLICY_PLUGIN_ABI,
                                        "fuzzed",
                                        "a fuzzed plugin",
                                        "",
                                        create,
                                        destroy,
                                        allocate,
                                        free_block,
                                        empty_cache,
                                        last_error};

// A consistent trace: allocations at fresh addresses, frees of live ones, some empty_cache calls.
std::vector<memreplay::Event> events_from_script() {
  std::vector<memreplay::Event> events;
  std::vector<uint64_t> live;
  uint64_t next = 0x10000;
  for (int i = 0; i < 64 && !script->done(); ++i) {
    const uint8_t op = script->byte();
    if (op < 140 || live.empty()) {
      events.push_back({.kind = memreplay::EventKind::alloc, .address = next, .size = script->number() + 1});
      live.push_back(next);
      next += 0x10000;
    } else if (op < 250) {
      const size_t at = op % live.size();
      events.push_back({.kind = memreplay::EventKind::free_completed, .address = live[at]});
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
    } else {
      events.push_back({.kind = memreplay::EventKind::empty_cache});
    }
  }
  return events;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Script input(data, size);
  script = &input;
  memreplay::SimDevice::Options options;
  if (const uint8_t cap = input.byte(); cap != 0) options.capacity = uint64_t{cap} << 22;
  memreplay::SimDevice device(options);
  try {
    const auto policy = memreplay::make_plugin_policy(kTable, "", device);
    memreplay::ReplayOptions replay;
    replay.trace_path = "fuzzed.mrt";
    replay.policy_spec = "fuzzed";
    replay.continue_after_oom = input.byte() & 1;
    memreplay::ReplaySession session(*policy, device, replay);
    session.feed_batch(events_from_script(), 0);
    session.finish();
  } catch (const memreplay::InputError& e) {
    // The bridge checks every device call before the device does: a device's own refusal that
    // got through is a gap in those checks.
    if (std::strstr(e.what(), "made a device call that failed") != nullptr) std::abort();
  } catch (const memreplay::PolicySpecError&) {
  } catch (const memreplay::PolicyContractError&) {  // a fault while it was being created
  }
  script = nullptr;
  return 0;
}
