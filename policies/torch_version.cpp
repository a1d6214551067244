#include "policies/torch_version.h"

#include <algorithm>
#include <charconv>

#include "policies/registry.h"

namespace memreplay {
namespace {

// Reads a decimal number at the front of `text`, advancing it; nullopt without one.
std::optional<int> take_number(std::string_view& text) {
  int value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return value;
}

// "pytorch@2.13" -> "pytorch": the family a version variant belongs to.
std::string_view family(std::string_view name) { return name.substr(0, name.find('@')); }

// The trace's text as one short printable line: a header is input, and may hold anything.
std::string printable(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string out;
  for (const char c : text.substr(0, kMax)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return text.size() > kMax ? out + "..." : out;
}

}  // namespace

std::optional<TorchVersion> parse_torch_version(std::string_view text) {
  const auto major = take_number(text);
  if (!major || text.empty() || text.front() != '.') return std::nullopt;
  text.remove_prefix(1);
  const auto minor = take_number(text);
  if (!minor) return std::nullopt;
  return TorchVersion{*major, *minor};
}

std::string to_string(TorchVersion version) {
  return std::to_string(version.major) + "." + std::to_string(version.minor);
}

std::string models_torch_version(std::string_view policy_spec) {
  const PolicyInfo* info = PolicyRegistry::instance().find(detail::split_spec(policy_spec).first);
  return info == nullptr ? std::string() : info->models_torch_version;
}

std::optional<std::string> torch_version_mismatch(std::string_view trace_version, std::string_view policy_spec) {
  return torch_version_mismatch(trace_version, policy_spec, PolicyRegistry::instance().policies());
}

std::optional<std::string> torch_version_mismatch(std::string_view trace_version, std::string_view policy_spec,
                                                  const std::vector<PolicyInfo>& policies) {
  // Named, not a structured binding: a lambda may not capture one (clang, C++20).
  const std::string_view name = detail::split_spec(policy_spec).first;
  const auto named =
      std::find_if(policies.begin(), policies.end(), [&](const PolicyInfo& p) { return p.name == name; });
  if (named == policies.end()) return std::nullopt;
  const PolicyInfo* info = &*named;
  const auto modelled = parse_torch_version(info->models_torch_version);
  const auto recorded = parse_torch_version(trace_version);
  if (!modelled || !recorded || *modelled == *recorded) return std::nullopt;

  std::string message = "the trace was recorded with torch " + printable(trace_version) + ", but policy '" +
                        std::string(name) + "' models PyTorch " + to_string(*modelled) +
                        "; where the allocator changed between them, the replay decides as " + to_string(*modelled) +
                        " did";
  // The variant of the same family that models the trace's release, and the newest one there is.
  const PolicyInfo* match = nullptr;
  const PolicyInfo* newest = nullptr;
  std::optional<TorchVersion> newest_version;
  for (const PolicyInfo& candidate : policies) {
    if (family(candidate.name) != family(name)) continue;
    const auto version = parse_torch_version(candidate.models_torch_version);
    if (!version) continue;
    if (*version == *recorded && (match == nullptr || candidate.name.size() < match->name.size())) match = &candidate;
    if (!newest_version || *version > *newest_version) {
      newest = &candidate;
      newest_version = version;
    }
  }
  // The variant is named without the spec's options (the user keeps theirs): the same text for
  // every spec of one family, so that a command with several warns once per trace.
  if (match != nullptr && match != info) {
    // The plain family name is the measured model; an @VERSION variant is read from source only.
    const bool measured = match->name.find('@') == std::string::npos;
    message += "; --policy " + match->name + " models " + to_string(*recorded) +
               (measured ? " (checked against real traces)" : " (read from PyTorch's source; no ground truth here)");
  } else if (match == nullptr) {
    message += "; no policy models " + to_string(*recorded);
    if (newest != nullptr && newest != info) message += " (the newest modelled is " + newest->name + ")";
  }
  return message + " (docs/pytorch-versions.md)";
}

}  // namespace memreplay
