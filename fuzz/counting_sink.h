// The fuzz targets' trace sink: counts what an importer hands it and keeps nothing.
#pragma once

#include <cstdint>
#include <span>

#include "proto/trace_sink.h"

namespace memreplay::fuzz {

class CountingSink final : public TraceSink {
 public:
  void begin(const proto::TraceHeader&) override {}
  uint32_t intern_stack(std::span<const FrameText> frames) override { return static_cast<uint32_t>(frames.size()) + 1; }
  void append(const Event&) override { ++events; }
  void append_annotation(const Event&, const KeyValues&) override { ++events; }
  void finish() override {}
  uint64_t events = 0;
};

}  // namespace memreplay::fuzz
