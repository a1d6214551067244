// The RMM CSV log importer on arbitrary text: a refusal (InputError) or a whole trace.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proto/input_error.h"
#include "recorder/import/rmm/rmm_log_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  memreplay::CollectingSink sink;
  try {
    memreplay::import_rmm_log_text(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", sink);
  } catch (const memreplay::InputError&) {}
  return 0;
}
