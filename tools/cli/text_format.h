// Byte sizes into the CLI ("8GiB" -> 8589934592; out: base/units.h's format_bytes), output files,
// warnings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace memreplay::cli {

// results::parse_bytes (results/byte_count.h), its warning for a plain integer printed (warn()).
uint64_t parse_bytes(std::string_view text, std::string_view option);
// Writes JSON to FILE, or to stdout for "-". Throws InputError if the file can't be written.
void write_json(const nlohmann::json& value, const std::string& path);
// Writes `text` whole or not at all (base/output_file.h: its rules for symlinks, devices, inputs).
void write_file_atomically(const std::string& path, const std::string& text);
// "memreplay: warning: ..." on stderr.
void warn(const std::string& message);
bool stderr_is_terminal();

}  // namespace memreplay::cli
