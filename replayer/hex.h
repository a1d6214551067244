// Addresses in messages, as the program saw them: 0x7f2a6c000000.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace memreplay {

inline std::string hex_address(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace memreplay
