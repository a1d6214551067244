// The data-only unpickler on arbitrary bytes: it must refuse (InputError) or build a tree, and a
// walk of the tree along its containers must stay in bounds.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/input_error.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace {

// Visits containers down to a fixed depth and at most kMaxVisits values in all: the tree may hold
// cycles, and a dict of a few hundred bytes that holds itself as many keys and values has
// (2 x pairs)^depth paths (a 221-byte input took 15 s of this walk under ASan, the unpickle a
// millisecond). Every scalar visited is read. 10,000, not more: a real-shaped seed's shared frame
// lists reach the budget on nearly every mutation, and at 100,000 the walk took 70% of the
// executions' time (1,755 against 5,846 executions/s over the corpus, 20 s, seed 1).
constexpr uint64_t kMaxVisits = 10'000;

uint64_t walk(memreplay::pickle::Value v, int depth, uint64_t& visits) {
  using memreplay::pickle::Kind;
  if (++visits > kMaxVisits) return 0;
  uint64_t sum = static_cast<uint64_t>(v.kind());
  if (v.is(Kind::str) || v.is(Kind::bytes)) return sum + v.as_str().size();
  if (v.is(Kind::integer) || v.is(Kind::boolean)) return sum + static_cast<uint64_t>(v.as_int());
  if (depth == 0) return sum;
  if (v.is(Kind::dict)) {
    for (auto [k, item] : v.pairs()) {
      if (visits > kMaxVisits) break;
      sum += walk(k, depth - 1, visits) + walk(item, depth - 1, visits);
    }
  } else {
    for (auto item : v.items()) {
      if (visits > kMaxVisits) break;
      sum += walk(item, depth - 1, visits);
    }
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const memreplay::pickle::Tree tree = memreplay::pickle::unpickle(bytes, "fuzz");
    uint64_t visits = 0;
    volatile uint64_t sink = walk(tree.root(), 4, visits);
    (void)sink;
  } catch (const memreplay::InputError&) {}
  return 0;
}
