// The cold path of free_held() (device.h), out of line so that every caller's hot path stays a
// call and a branch.
#include "policies/device.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace memreplay::detail {

void throw_refused_free(uint64_t address) {
  char text[96];
  std::snprintf(text, sizeof text, "the device refused the free of 0x%llx, which its caller believed it held",
                static_cast<unsigned long long>(address));
  throw std::logic_error(text);
}

}  // namespace memreplay::detail
