// memreplay info TRACE: what a trace holds, and the peak of live requested bytes with its stacks.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "base/text_escape.h"
#include "base/units.h"
#include "proto/trace_reader.h"
#include "replayer/trace_summary.h"
#include "tools/cli/command.h"
#include "tools/cli/commands.h"
#include "tools/cli/text_format.h"

namespace memreplay::cli {
namespace {

constexpr const char* kHelp =
    "Summarize a trace: events per kind, devices, streams, duration, the peak of live requested "
    "bytes and the stacks live at it.\n"
    "  memreplay info run.mrt --json";

// A string of the summary as the terminal may show it: the trace's text is escaped.
std::string text(const nlohmann::json& value) { return terminal_safe(value.get<std::string>()); }

void print_summary(const nlohmann::json& s) {
  std::printf("%s: %s trace (format %s)%s\n", text(s["trace"]).c_str(), text(s["source"]).c_str(),
              text(s["format_version"]).c_str(),
              s["complete"].get<bool>() ? "" : ", INCOMPLETE: read up to its last whole chunk");
  if (!s["source_file"].get<std::string>().empty()) std::printf("  imported from %s\n", text(s["source_file"]).c_str());
  if (!s["allocator_settings"].empty()) {
    std::string settings;
    for (const auto& [key, value] : s["allocator_settings"].items())
      settings += (settings.empty() ? "" : ",") + key + ":" + value.get<std::string>();
    std::printf("  recorded with allocator settings %s\n", terminal_safe(settings).c_str());
  }
  if (s["starts_mid_run"].get<bool>())
    std::printf("  starts mid-run: the allocator state at its first entry was rebuilt\n");
  std::map<std::string, std::string> pool_labels{{"0", "default"}};
  for (const auto& p : s["pools"]) {
    const std::string kind = p["kind"].get<std::string>().empty() ? "kind unknown" : text(p["kind"]);
    std::printf("  private pool %u: %s, PyTorch id (%llu, %llu)%s\n", p["id"].get<unsigned>(), kind.c_str(),
                p["torch_id"][0].get<unsigned long long>(), p["torch_id"][1].get<unsigned long long>(),
                p["name"].get<std::string>().empty() ? "" : (" " + text(p["name"])).c_str());
    pool_labels[std::to_string(p["id"].get<unsigned>())] = kind;
  }
  for (const auto& d : s["devices"]) {
    std::string gpu = text(d["name"]);
    if (d["total_memory"].get<uint64_t>() > 0)
      gpu += (gpu.empty() ? "" : ", ") + format_bytes(d["total_memory"].get<uint64_t>());
    std::printf("device %d%s: %zu streams, %.3f s\n", d["device"].get<int>(),
                gpu.empty() ? "" : (" (" + gpu + ")").c_str(), d["streams"].size(),
                d["duration_ns"].get<double>() / 1e9);
    if (!d["cap_bytes"].is_null())
      std::printf("  recorded per-process cap: %s (%llu bytes; a replay without --capacity uses it)\n",
                  format_bytes(d["cap_bytes"].get<uint64_t>()).c_str(), d["cap_bytes"].get<unsigned long long>());
    for (const auto& [kind, count] : d["events_per_kind"].items())
      std::printf("  %-18s %llu\n", kind.c_str(), count.get<unsigned long long>());
    for (const auto& [kind, count] : d["inferred_per_kind"].items())
      std::printf("  %-18s %llu (inferred by the importer, not recorded)\n", kind.c_str(),
                  count.get<unsigned long long>());
    for (const auto& [kind, count] : d["failed_per_kind"].items())
      std::printf("  %-18s %llu failed calls (never live)\n", kind.c_str(), count.get<unsigned long long>());
    if (!d["allocations_visible"].get<bool>())
      std::printf(
          "  no allocation of the program: only the segments its allocator got from the device (an allocator that\n"
          "  suballocates, such as CuPy's memory pool or JAX's BFC allocator); a replay has nothing to place\n"
          "  (docs/recording.md, \"Other frameworks\")\n");
    const auto& start = d["starting_state"];
    if (start["segments"].get<uint64_t>() + start["blocks"].get<uint64_t>() > 0)
      std::printf(
          "  rebuilt starting state (not recorded events): %llu segments (%s), %llu live blocks (%s requested)\n",
          start["segments"].get<unsigned long long>(), format_bytes(start["segment_bytes"].get<uint64_t>()).c_str(),
          start["blocks"].get<unsigned long long>(), format_bytes(start["block_bytes"].get<uint64_t>()).c_str());
    if (!d["pools"].empty())
      std::printf("  %-4s %-12s %10s %15s %9s %14s %15s\n", "pool", "kind", "allocs", "under capture", "segments",
                  "peak reserved", "peak requested");
    for (const auto& [pool, p] : d["pools"].items()) {
      const auto label = pool_labels.find(pool);
      // Allocations made while a CUDA graph was being captured, where the trace flags them.
      const std::string captured = p["captured_allocs"].is_null()
                                       ? "not recorded"
                                       : std::to_string(p["captured_allocs"].get<unsigned long long>());
      std::printf("  %-4s %-12s %10llu %15s %9llu %14s %15s\n", pool.c_str(),
                  label == pool_labels.end() ? "kind unknown" : label->second.c_str(),
                  p["allocs"].get<unsigned long long>(), captured.c_str(), p["segments"].get<unsigned long long>(),
                  format_bytes(p["peak_reserved_bytes"].get<uint64_t>()).c_str(),
                  format_bytes(p["peak_requested_bytes"].get<uint64_t>()).c_str());
    }
    if (const auto& unknown = d["pool_unknown"]; unknown["segments"].get<uint64_t>() > 0)
      std::printf(
          "  pool unknown: %llu segments freed before the snapshot was taken, holding %llu allocations, are read as\n"
          "  the default pool (the snapshot names the pools of the segments it still holds only; a graph or MemPool\n"
          "  pool released before it is one such); the live recorder (memreplay.torch) records every pool\n",
          unknown["segments"].get<unsigned long long>(), unknown["allocations"].get<unsigned long long>());
    if (!d["peak_reserved_bytes"].is_null())
      std::printf("  recorded reserved peak: %s (%llu bytes; the segments the allocator held)\n",
                  format_bytes(d["peak_reserved_bytes"].get<uint64_t>()).c_str(),
                  d["peak_reserved_bytes"].get<unsigned long long>());
    std::printf("  peak live requested: %s (%llu bytes) at event %llu\n",
                format_bytes(d["peak_requested_bytes"].get<uint64_t>()).c_str(),
                d["peak_requested_bytes"].get<unsigned long long>(), d["peak_event"].get<unsigned long long>());
    for (const auto& top : d["top_stacks_at_peak"]) {
      if (top["stack"].empty()) continue;
      const auto& f = top["stack"][0];
      std::printf("    %10s in %llu blocks from %s:%d %s\n", format_bytes(top["bytes"].get<uint64_t>()).c_str(),
                  top["blocks"].get<unsigned long long>(), text(f["filename"]).c_str(), f["line"].get<int>(),
                  text(f["name"]).c_str());
    }
  }
}

struct InfoOptions {
  std::string trace;
  std::string json;
};

void info(const InfoOptions& options) {
  TraceReader reader(options.trace);
  const nlohmann::json summary = trace_summary_json(reader, options.trace);
  if (options.json != "-") print_summary(summary);
  if (!options.json.empty()) write_json(summary, options.json);
}

}  // namespace

void add_info_command(CLI::App& app) { add_trace_command<InfoOptions>(app, "info", kHelp, info, "the summary"); }

}  // namespace memreplay::cli
