// The one routine through which `check` writes its files (JUnit, Markdown, JSON, the baseline):
// through a temporary file beside the target and a rename, so that a failure leaves the old file
// whole and no partial new one. The tool's common output routine replaces its body when it lands.
#pragma once

#include <string>
#include <string_view>

namespace memreplay::results {

// Throws InputError naming `path` when it cannot be written.
void write_output_file(const std::string& path, std::string_view text);

}  // namespace memreplay::results
