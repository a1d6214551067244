// A --policy spec of arbitrary text: every registered policy is created from "NAME:<bytes>" and
// must either accept it or throw PolicySpecError; an accepted one serves a few requests.
#include <cstddef>
#include <cstdint>
#include <string>

#include "policies/registry.h"
#include "replayer/device_registry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string options(reinterpret_cast<const char*>(data), size);
  for (const auto& info : memreplay::PolicyRegistry::instance().policies()) {
    const std::string name(info.name);
    memreplay::DeviceRequest request;
    request.capacity = uint64_t{1} << 30;
    auto device = memreplay::DeviceRegistry::instance().create("sim", request);
    try {
      auto policy = memreplay::PolicyRegistry::instance().create(name + ":" + options, *device);
      auto a = policy->allocate(1000, memreplay::StreamId{0});
      auto b = policy->allocate(3u << 20, memreplay::StreamId{0});
      if (a) policy->free(a->address, memreplay::StreamId{0});
      if (b) policy->free(b->address, memreplay::StreamId{0});
      policy->empty_cache();
    } catch (const memreplay::PolicySpecError&) {}
  }
  return 0;
}
