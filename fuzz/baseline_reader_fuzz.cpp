// A check baseline of arbitrary bytes (it comes with a pull request): parse_baseline either reads
// it or throws InputError; a baseline it reads is written back (baseline_text) and must read
// again to the same text, else a trap: what check writes, check reads.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proto/input_error.h"
#include "results/baseline.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  memreplay::results::Baseline baseline;
  try {
    baseline = memreplay::results::parse_baseline(text, "fuzz.json");
  } catch (const memreplay::InputError&) {
    return 0;
  }
  const std::string written = memreplay::results::baseline_text(baseline);
  const std::string again =
      memreplay::results::baseline_text(memreplay::results::parse_baseline(written, "again.json"));
  if (again != written) __builtin_trap();
  return 0;
}
