// The data-only unpickler on arbitrary bytes: it must refuse (InputError) or build a tree, and a
// walk of the tree along its containers must stay in bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/input_error.h"
#include "recorder/import/pickle_reader.h"

namespace {

// Visits containers down to a fixed depth (the tree may hold cycles) and reads every scalar.
uint64_t walk(memreplay::pickle::Value v, int depth) {
  using memreplay::pickle::Kind;
  uint64_t sum = static_cast<uint64_t>(v.kind());
  if (v.is(Kind::str) || v.is(Kind::bytes)) return sum + v.as_str().size();
  if (v.is(Kind::integer) || v.is(Kind::boolean)) return sum + static_cast<uint64_t>(v.as_int());
  if (depth == 0) return sum;
  if (v.is(Kind::dict)) {
    for (auto [k, item] : v.pairs()) sum += walk(k, depth - 1) + walk(item, depth - 1);
  } else {
    for (auto item : v.items()) sum += walk(item, depth - 1);
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const memreplay::pickle::Tree tree = memreplay::pickle::unpickle(bytes, "fuzz");
    volatile uint64_t sink = walk(tree.root(), 4);
    (void)sink;
  } catch (const memreplay::InputError&) {
  }
  return 0;
}
