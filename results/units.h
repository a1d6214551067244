// Numbers as people read them: 1264582656 -> "1.18 GiB", 0.4912 -> "49.1%".
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace memreplay::results {

std::string format_bytes(uint64_t bytes);
// Two different byte counts printed side by side ("fits in A; fails at B") so that they never read
// the same: in one unit, with more decimals while they would round alike, as whole bytes beyond 6.
std::pair<std::string, std::string> format_bytes_apart(uint64_t a, uint64_t b);
std::string format_percent(double fraction);
// "1.53×"
std::string format_ratio(double ratio);

}  // namespace memreplay::results
