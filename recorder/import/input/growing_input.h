// Input bytes that another thread is still producing: a decompressor writes them, in order, into
// one contiguous range, and a reader going front to back (the unpickler) reads behind it instead
// of waiting for the whole file. Bytes [0, available) never change once available.
#pragma once

#include <cstdint>

namespace memreplay {

class GrowingInput {
 public:
  virtual ~GrowingInput() = default;
  // Where the bytes are; the range stays in place while the input lives.
  virtual const char* data() const = 0;
  // Blocks until at least `bytes` bytes are available or the input is complete, then returns how
  // many are available: fewer than `bytes` only when the whole input is shorter. Throws the
  // producer's InputError (a corrupt or truncated stream, a decompression bomb) once it failed,
  // however many bytes came before: a reader that calls again every so often stops soon after.
  virtual uint64_t wait_for(uint64_t bytes) const = 0;
};

}  // namespace memreplay
