// The PyTorch snapshot importer on arbitrary pickle bytes: a refusal (InputError) or a whole
// trace, written to a sink that keeps nothing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proto/input_error.h"
#include "recorder/import/pytorch_snapshot_importer.h"

namespace {

class CountingSink final : public memreplay::TraceSink {
 public:
  void begin(const memreplay::proto::TraceHeader&) override {}
  uint32_t intern_stack(std::span<const memreplay::FrameText> frames) override {
    return static_cast<uint32_t>(frames.size()) + 1;
  }
  void append(const memreplay::Event&) override { ++events; }
  void append_annotation(const memreplay::Event&, const memreplay::KeyValues&) override { ++events; }
  void finish() override {}
  uint64_t events = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CountingSink sink;
  try {
    memreplay::import_pytorch_snapshot_pickle(std::string_view(reinterpret_cast<const char*>(data), size),
                                              "fuzz", sink);
  } catch (const memreplay::InputError&) {
  }
  return 0;
}
