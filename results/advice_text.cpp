// The advice as JSON and as text (results/advice.h).
#include <nlohmann/json.hpp>

#include "proto/schema_versions.h"

#include "base/units.h"
#include "results/advice.h"
#include "results/text_table.h"

namespace memreplay::results {
namespace {

std::string gpu_label(uint64_t bytes) { return std::to_string(bytes / 1'000'000'000) + "GB"; }

nlohmann::json fit_json(const std::optional<FitScan>& fit) {
  if (!fit) return nullptr;
  return {{"smallest_fit_bytes", fit->smallest_fit_bytes}, {"fails_at_bytes", fit->fails_below_smallest_bytes},
          {"fits_above_bytes", fit->fits_above_bytes},     {"monotonic", fit->monotonic},
          {"resolution_bytes", fit->resolution_bytes},     {"replays", fit->replays}};
}

nlohmann::json candidate_json(const Advice& a, const CandidateResult& c) {
  nlohmann::json fits = nlohmann::json::object();
  for (uint64_t size : a.gpu_sizes)
    fits[gpu_label(size)] = c.fit ? nlohmann::json(c.fit->fits_above_bytes <= size) : nlohmann::json(nullptr);
  const DeviceCalls& d = c.metrics.device_calls;
  return nlohmann::json{{"policy", c.policy},
                        {"paste", c.paste},
                        {"reserved_peak", c.metrics.reserved_peak},
                        {"requested_peak", c.metrics.requested_peak},
                        {"device_calls", d.total()},
                        {"device_calls_by_kind", to_json(d)},
                        {"device_alloc_calls", c.metrics.device_alloc_calls},
                        {"device_free_calls", c.metrics.device_free_calls},
                        {"oom", c.metrics.oom_at_event.has_value()},
                        {"oom_at_event", c.metrics.oom_at_event ? nlohmann::json(*c.metrics.oom_at_event) : nullptr},
                        {"standing", standing_name(c.standing)},
                        {"fit", fit_json(c.fit)},
                        {"smallest_fit_bytes", c.fit ? nlohmann::json(c.fit->smallest_fit_bytes) : nullptr},
                        {"fits_above_bytes", c.fit ? nlohmann::json(c.fit->fits_above_bytes) : nullptr},
                        {"fits_on_gpu", fits}};
}

std::string headline(const Advice& a) {
  const ReplayMetrics& now = a.current.metrics;
  std::string out = a.trace + " with " + a.current_policy +
                    (a.capacity ? " at capacity " + format_bytes(*a.capacity) : std::string()) + ": ";
  if (now.oom_at_event)
    out += "OUT OF MEMORY at replay event " + std::to_string(*now.oom_at_event) + " (numbers up to there: reserved " +
           format_bytes(now.reserved_peak) + ")";
  else
    out += "reserved peak " + format_bytes(now.reserved_peak) + ", requested peak " + format_bytes(now.requested_peak) +
           ", device calls " + std::to_string(total_device_calls(now));
  if (a.current.fit) {
    const auto [fits, fails] =
        format_bytes_apart(a.current.fit->smallest_fit_bytes, a.current.fit->fails_below_smallest_bytes);
    out += "; fits in " + fits + " (fails at " + fails + ")";
  }
  return out + "\n";
}

// The smallest of the common GPUs a setting fits on: it fits on every larger one too.
std::string smallest_gpu(const Advice& a, const CandidateResult& c) {
  if (!c.fit) return "?";
  for (uint64_t size : a.gpu_sizes)
    if (c.fit->fits_above_bytes <= size) return gpu_label(size);
  return "none";
}

std::string settings_table(const Advice& a) {
  std::vector<const CandidateResult*> rows = {&a.current};
  for (const auto& c : a.candidates) rows.push_back(&c);
  std::vector<uint64_t> peaks, fits;
  for (const auto* c : rows) {
    peaks.push_back(c->metrics.reserved_peak);
    if (c->fit) fits.push_back(c->fit->smallest_fit_bytes);
  }
  const ByteUnit peak_unit = byte_unit_for(peaks), fit_unit = byte_unit_for(fits);
  std::vector<TextColumn> columns = {{"", true},
                                     {"setting", true},
                                     {"reserved\npeak " + peak_unit.name},
                                     {"device\ncalls"},
                                     {"smallest\nfit " + fit_unit.name},
                                     {"at this\ncapacity", true},
                                     {"smallest GPU\nit fits on", true}};
  std::vector<std::vector<std::string>> cells;
  for (const auto* c : rows) {
    const bool starred = a.recommended && *a.recommended == c->policy && rows.size() > 1;
    std::string note = c->metrics.oom_at_event                   ? "OOM"
                       : c->standing == Standing::too_many_calls ? "fits, too many calls"
                                                                 : "fits";
    if (c == &a.current) note += " (now)";
    cells.push_back({starred ? "*" : "", wrap_spec(c->policy, 44),
                     c->metrics.oom_at_event ? "-" : format_in_unit(c->metrics.reserved_peak, peak_unit),
                     format_count(total_device_calls(c->metrics)),
                     c->fit ? format_in_unit(c->fit->smallest_fit_bytes, fit_unit) : "?", note, smallest_gpu(a, *c)});
  }
  std::string notes = "  " + star_rule_text(a.call_rule) + ".\n";
  notes += "  Smallest fit: the smallest per-process capacity found to fit (resolution " +
           format_bytes(a.fit_search.resolution_bytes) +
           "; ? = not searched). Smallest GPU: of 24, 40, 48, 80, 94 and 141 GB, the first at or above which every "
           "tested capacity fitted; the CUDA context takes some more. " +
           std::string(kDeviceCallsDefinition) + ".\n";
  return render_table(columns, cells, "  ") + wrap_text(notes, kTableWidth, "    ");
}

}  // namespace

nlohmann::json advice_json(const Advice& a, const std::vector<std::vector<std::string>>& frames) {
  nlohmann::json items = nlohmann::json::array(), candidates = nlohmann::json::array(),
                 stacks = nlohmann::json::array();
  for (const auto& i : a.items)
    items.push_back({{"title", i.title}, {"paste", i.paste}, {"policy", i.policy}, {"evidence", i.evidence}});
  for (const auto& c : a.candidates) candidates.push_back(candidate_json(a, c));
  for (size_t i = 0; i < a.peak.top_stacks.size(); ++i)
    stacks.push_back({{"requested_bytes", a.peak.top_stacks[i].bytes},
                      {"blocks", a.peak.top_stacks[i].blocks},
                      {"frames", i < frames.size() ? frames[i] : std::vector<std::string>{}}});
  const CallRule& r = a.call_rule;
  return {{"schema", "memreplay-advice"},
          {"schema_version", schema::kAdvice},
          {"trace", a.trace},
          {"capacity", a.capacity ? nlohmann::json(*a.capacity) : nullptr},
          {"current", candidate_json(a, a.current)},
          {"recommended", a.recommended ? nlohmann::json(*a.recommended) : nullptr},
          {"call_rule", to_json(r)},
          {"fit_resolution_bytes", a.fit_search.resolution_bytes},
          {"empty_cache_calls", a.empty_cache_calls},
          {"items", items},
          {"candidates", candidates},
          {"peak_stacks", stacks},
          {"definitions", {{"device_calls", kDeviceCallsDefinition}}}};
}

std::string advice_text(const Advice& a, const std::vector<std::vector<std::string>>& frames) {
  std::string out = wrap_text(headline(a), kTableWidth, "  ") + "\n";
  if (a.items.empty()) out += "Nothing to change: no candidate setting lowers the reserved peak or the device calls.\n";
  for (size_t i = 0; i < a.items.size(); ++i)
    out += wrap_text(std::to_string(i + 1) + ". " + a.items[i].title, kTableWidth, "   ") +
           wrap_text("   " + a.items[i].evidence, kTableWidth, "   ");
  if (!a.peak.top_stacks.empty()) {
    out += "\nStacks that own the reserved peak (requested bytes live then):\n";
    for (size_t i = 0; i < a.peak.top_stacks.size() && i < 5; ++i) {
      const auto& s = a.peak.top_stacks[i];
      out += "  " + format_bytes(s.bytes) + " in " + std::to_string(s.blocks) + " blocks  " +
             (i < frames.size() && !frames[i].empty() ? frames[i][0] : std::string("(no stack recorded)")) + "\n";
    }
  }
  out += std::string("\nSettings tried") +
         (a.capacity ? " at capacity " + format_bytes(*a.capacity) : std::string(" (no capacity given)")) + ":\n";
  return out + settings_table(a);
}

}  // namespace memreplay::results
