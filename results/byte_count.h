// Byte counts as people write them ("8GiB" -> 8589934592) for an option, for the CLI's options and
// the Python API alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memreplay::results {

// A byte count for `option`, by base/units.h's parse_byte_input (its rules). A plain integer is
// bytes; then `warning`, where given, is set to say so (a forgotten unit: "7" is 7 bytes). What
// parse_byte_input refuses is an InputError naming `option`.
uint64_t parse_bytes(std::string_view text, std::string_view option, std::string* warning = nullptr);

}  // namespace memreplay::results
