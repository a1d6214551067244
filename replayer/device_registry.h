// The table of devices a replay can run on ("sim", "cuda"), by name, as policies are. A device
// spec is NAME or NAME:INDEX ("cuda:1"). Devices register from their own .cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policies/detail/named_registry.h"
#include "policies/device.h"

namespace memreplay {

struct DeviceRequest {
  int index = 0;  // which physical device, for real ones
  uint64_t total_memory = 0;  // for simulated devices: the recorded device's memory
  std::optional<uint64_t> capacity;  // per-process cap in bytes
  bool follow_recorded_placement = true;  // simulated devices: see Device::recorded_malloc
};

using DeviceFactory = std::function<std::unique_ptr<Device>(const DeviceRequest&)>;

struct DeviceInfoEntry {
  std::string name;
  std::string description;
  DeviceFactory factory;
};

class DeviceRegistry {
 public:
  static DeviceRegistry& instance();
  // Throws detail::RegistrationError for a name that is already registered.
  bool add(DeviceInfoEntry entry) { return table_.add(std::move(entry)); }
  const std::vector<DeviceInfoEntry>& devices() const { return table_.entries(); }
  // Throws InputError for an unknown name or a bad index; a device that cannot start (no GPU)
  // throws InputError with the reason.
  std::unique_ptr<Device> create(std::string_view spec, DeviceRequest request) const;

 private:
  detail::NamedRegistry<DeviceInfoEntry> table_{"device"};
};

#define MEMREPLAY_REGISTER_DEVICE(ident, ...) \
  MEMREPLAY_REGISTER_IN(::memreplay::DeviceRegistry, device_##ident, __VA_ARGS__)

}  // namespace memreplay
