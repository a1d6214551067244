// What the tests of memreplay check share: a scratch folder holding gpt2_train's imported trace
// and the path of its baseline, and a trace whose every allocation grew by a quarter.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proto/event.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "tests/support/cli_run.h"
#include "tests/support/test_support.h"

namespace memreplay::testing {

// trace_: a copy of gpt2_train.default's imported trace; baseline_: where its baseline goes.
class CheckBaselineTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    trace_ = path("gpt2_train.mrt");
    std::filesystem::copy_file(imported_trace("gpt2_train.default"), trace_);
    baseline_ = path("baseline.json");
  }
  nlohmann::json baseline() { return nlohmann::json::parse(slurp(baseline_)); }
  void write_baseline(const nlohmann::json& j) { std::ofstream(baseline_) << j.dump(2); }
  std::string trace_, baseline_;
};

// `original` with every allocation 25% larger, written to `out` (returned): a model that grew.
inline std::string grown_trace(const std::string& original, const std::string& out) {
  TraceReader reader(original);
  TraceWriter writer(out);
  writer.begin(reader.header());
  std::vector<Event> batch;
  while (reader.next_batch(batch))
    for (Event e : batch) {
      if (e.kind == EventKind::alloc) e.size += e.size / 4;
      writer.append(e);
    }
  writer.finish();
  return out;
}

}  // namespace memreplay::testing
