// Decompression of arbitrary bytes (gzip, zlib, xz, zstd, told by content) under a 64 MiB
// ceiling: a refusal (InputError) or the content, never an allocation sized by a declared length.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "proto/input_error.h"
#include "recorder/import/input/decompress.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto out =
        memreplay::decompress(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz", uint64_t{64} << 20);
    volatile size_t n = out.size();
    (void)n;
  } catch (const memreplay::InputError&) {}
  return 0;
}
