// The PyTorch snapshot importer on arbitrary pickle bytes: a refusal (InputError) or a whole
// trace, written to a sink that keeps nothing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/counting_sink.h"
#include "proto/input_error.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"

using memreplay::fuzz::CountingSink;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CountingSink sink;
  try {
    memreplay::import_pytorch_snapshot_pickle(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz",
                                              sink);
  } catch (const memreplay::InputError&) {}
  return 0;
}
