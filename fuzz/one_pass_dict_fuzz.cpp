// The unpickler's one-pass read of trace-entry dicts (recorder/import/unpickler_shaped_dict.cpp)
// against its opcode-by-opcode path (UnpickleOptions::one_pass_dicts off), differentially, on
// arbitrary bytes: streamed to a DeviceTraceSink and not, both must refuse the input with the same
// line or build the same tree and hand over the same items (tests/support/
// pickle_tree_signature.h). Any difference is a bug (trapped), as are a crash, a sanitizer report
// or a leak.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tests/support/pickle_tree_signature.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using memreplay::testing::PickleTreeSignature;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const bool streaming : {false, true}) {
    const std::string one_pass = PickleTreeSignature::of(bytes, true, streaming);
    const std::string generic = PickleTreeSignature::of(bytes, false, streaming);
    if (one_pass != generic) {
      std::fprintf(stderr, "one_pass_dict_fuzz: the two paths differ (%s):\n%.2000s\nvs\n%.2000s\n",
                   streaming ? "streamed" : "not streamed", one_pass.c_str(), generic.c_str());
      std::abort();
    }
  }
  return 0;
}
