// Byte sizes in and out of the CLI: "8GiB" -> 8589934592, 1264582656 -> "1.18 GiB".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace memreplay::cli {

// Accepts a plain byte count or a number with a unit: B, KiB, MiB, GiB, TiB (powers of 1024) or
// KB, MB, GB, TB (powers of 1000), case-insensitive. Throws InputError naming `option`.
uint64_t parse_bytes(std::string_view text, std::string_view option);
std::string format_bytes(uint64_t bytes);
std::string format_percent(double fraction);
// Writes JSON to FILE, or to stdout for "-". Throws InputError if the file can't be written.
void write_json(const nlohmann::json& value, const std::string& path);
bool stderr_is_terminal();

}  // namespace memreplay::cli
