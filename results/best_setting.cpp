#include "results/best_setting.h"

#include <algorithm>

namespace memreplay::results {

std::optional<size_t> best_setting(std::span<const SettingOutcome> settings, size_t current,
                                   double device_call_factor) {
  if (current >= settings.size()) return std::nullopt;
  const double allowed = device_call_factor * double(std::max<uint64_t>(settings[current].device_calls, 1));
  const auto qualifies = [&](const SettingOutcome& s) { return !s.failed && double(s.device_calls) <= allowed; };
  const auto better = [](const SettingOutcome& a, const SettingOutcome& b) {
    return a.reserved_peak != b.reserved_peak ? a.reserved_peak < b.reserved_peak : a.device_calls < b.device_calls;
  };
  std::optional<size_t> best;
  if (qualifies(settings[current])) best = current;
  for (size_t i = 0; i < settings.size(); ++i)
    if (qualifies(settings[i]) && (!best || better(settings[i], settings[*best]))) best = i;
  return best;
}

}  // namespace memreplay::results
