#include "replayer/device_registry.h"

#include <charconv>

#include "proto/input_error.h"
#include "replayer/sim_device.h"

namespace memreplay {

DeviceRegistry& DeviceRegistry::instance() {
  static DeviceRegistry registry;
  return registry;
}

bool DeviceRegistry::add(DeviceInfoEntry entry) {
  devices_.push_back(std::move(entry));
  return true;
}

std::unique_ptr<Device> DeviceRegistry::create(std::string_view spec, DeviceRequest request) const {
  const auto colon = spec.find(':');
  const auto name = spec.substr(0, colon);
  if (colon != std::string_view::npos) {
    const auto digits = spec.substr(colon + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), request.index);
    if (ec != std::errc() || end != digits.data() + digits.size() || request.index < 0)
      throw InputError("--device " + std::string(spec) + ": the device index must be a number >= 0");
  }
  std::string valid;
  for (const auto& d : devices_) {
    if (d.name == name) return d.factory(request);
    valid += (valid.empty() ? "" : ", ") + d.name;
  }
  throw InputError("--device " + std::string(spec) + ": unknown device (valid: " + valid + ")");
}

// The simulator is always available; it lives in sim_device.cpp's library, registered here so
// that the registry never exists without it.
MEMREPLAY_REGISTER_DEVICE(sim, "sim", "simulated GPU: deterministic, CPU only, with a capacity",
                          [](const DeviceRequest& r) -> std::unique_ptr<Device> {
                            SimDevice::Options options;
                            if (r.total_memory != 0) options.total_memory = r.total_memory;
                            options.capacity = r.capacity;
                            return std::make_unique<SimDevice>(options);
                          });

}  // namespace memreplay
