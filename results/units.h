// Numbers as people read them: 1264582656 -> "1.18 GiB", 0.4912 -> "49.1%".
#pragma once

#include <cstdint>
#include <string>

namespace memreplay::results {

std::string format_bytes(uint64_t bytes);
std::string format_percent(double fraction);
// "1.53×"
std::string format_ratio(double ratio);

}  // namespace memreplay::results
