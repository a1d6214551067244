#include "replayer/device_registry.h"

#include <charconv>

#include "proto/input_error.h"
#include "replayer/sim/sim_device.h"

namespace memreplay {

DeviceRegistry& DeviceRegistry::instance() {
  static DeviceRegistry registry;
  return registry;
}

std::unique_ptr<Device> DeviceRegistry::create(std::string_view spec, DeviceRequest request) const {
  const auto [name, index] = detail::split_spec(spec);
  if (spec.find(':') != std::string_view::npos) {
    const auto [end, ec] = std::from_chars(index.data(), index.data() + index.size(), request.index);
    if (ec != std::errc() || end != index.data() + index.size() || request.index < 0)
      throw InputError("--device " + std::string(spec) + ": the device index must be a number >= 0");
  }
  if (const DeviceInfoEntry* entry = table_.find(name)) return entry->factory(request);
  throw InputError("--device " + std::string(spec) + ": unknown device (valid: " + table_.names() + ")");
}

// The simulator is always available; it lives in sim_device.cpp's library, registered here so
// that the registry never exists without it.
MEMREPLAY_REGISTER_DEVICE(sim, "sim", "simulated GPU: deterministic, CPU only, with a capacity",
                          [](const DeviceRequest& r) -> std::unique_ptr<Device> {
                            SimDevice::Options options;
                            if (r.total_memory != 0) options.total_memory = r.total_memory;
                            options.capacity = r.capacity;
                            options.follow_recorded_placement = r.follow_recorded_placement;
                            return std::make_unique<SimDevice>(options);
                          });

}  // namespace memreplay
