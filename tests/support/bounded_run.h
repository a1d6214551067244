// The memreplay binary under the bounds a hostile input must keep it to (hostile_input_test.cpp,
// check_hostile_baseline_test.cpp).
#pragma once

#include <filesystem>
#include <string>

#include "tests/support/cli_run.h"

namespace memreplay::testing {

// run_memreplay under 1 GiB of address space (none under AddressSanitizer, which reserves
// terabytes of it) and 10 s of wall time (timeout exits 124); stderr apart, through `scratch_dir`.
CliRun run_memreplay_bounded(const std::string& arguments, const std::filesystem::path& scratch_dir);

}  // namespace memreplay::testing
