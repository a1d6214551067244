// memreplay bound TRACE: the floor for a trace (replayer/bound/offline_bound.h): the requested
// peak and what a static placement with every lifetime known in advance needs.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/units.h"
#include "replayer/bound/offline_bound.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "The floor for a trace: its requested peak, and the footprint of the best static placement found\n"
    "with every lifetime known (greedy by size), on requested and on 512-byte-rounded sizes.\n"
    "  memreplay bound run.mrt\n"
    "  memreplay bound run.mrt --minimalloc lifetimes.csv   # id,lower,upper,size for exact solvers";

struct BoundOptions {
  std::string trace;
  uint32_t trace_device = 0;
  std::string json;
  std::string minimalloc;
};

void bound(const BoundOptions& options) {
  const auto blocks = read_lifetimes(options.trace, options.trace_device);
  const OfflineBound b = compute_bound(blocks);
  if (!options.minimalloc.empty()) write_minimalloc_csv(blocks, options.minimalloc);
  const auto ratio = [&](uint64_t bytes) { return b.requested_peak ? double(bytes) / double(b.requested_peak) : 0.0; };
  if (options.json != "-") {
    std::printf("%s: %llu blocks over %llu replay events\n", options.trace.c_str(),
                static_cast<unsigned long long>(b.blocks), static_cast<unsigned long long>(b.events));
    std::printf("  requested peak                        %12s  (the floor)\n", format_bytes(b.requested_peak).c_str());
    std::printf("  static placement, requested sizes     %12s  %.4f x\n", format_bytes(b.greedy_requested).c_str(),
                ratio(b.greedy_requested));
    std::printf("  static placement, 512-rounded sizes   %12s  %.4f x  (live peak of rounded sizes %s)\n",
                format_bytes(b.greedy_rounded).c_str(), ratio(b.greedy_rounded), format_bytes(b.rounded_peak).c_str());
    std::printf("  %.3f s\n", b.seconds);
    if (!options.minimalloc.empty())
      std::printf("  lifetimes of %zu blocks written to %s (MiniMalloc CSV: id,lower,upper,size)\n", blocks.size(),
                  options.minimalloc.c_str());
  }
  if (!options.json.empty()) write_json(to_json(b, options.trace, options.minimalloc), options.json);
}

}  // namespace

void add_bound_command(CLI::App& app) {
  auto [command, options] = add_command<BoundOptions>(app, "bound", kHelp, bound);
  add_trace_argument(command, options.trace);
  command.add_option("--trace-device", options.trace_device, "which recorded device's events (default 0)");
  add_json_option(command, options.json, "the bound");
  command.add_option("--minimalloc", options.minimalloc,
                     "write the lifetimes as MiniMalloc's CSV (id,lower,upper,size)");
}

}  // namespace memreplay::cli
