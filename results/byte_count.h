// Byte counts as people write them ("8GiB" -> 8589934592), for the CLI's options and the Python
// API alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memreplay::results {

// A byte count with a unit: B, KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T alone mean the
// same: 24G is 24 GiB) or KB, MB, GB, TB (powers of 1000), case-insensitive, through the
// policies' one parser (policies/detail/policy_options.h).
// A plain integer is bytes; then `warning`, where given, is set to say so (a forgotten unit: "7"
// is 7 bytes). '', 0 and a fraction without a unit ("7.5") are refused: InputError naming `option`.
uint64_t parse_bytes(std::string_view text, std::string_view option, std::string* warning = nullptr);

}  // namespace memreplay::results
