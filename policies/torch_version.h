// Which PyTorch release a trace came from, which one a policy models, and the one comparison of
// the two that every trace command warns with (docs/pytorch-versions.md).
//
// The trace says it in its header: allocator_settings[kTorchVersionSetting], torch.__version__ as
// the recorder saw it ("2.13.0+cu128", "2.15.0a0+gitabc1234"). The live PyTorch recorder writes
// it (the "setting:torch_version" header key); a PyTorch snapshot pickle holds no version, so an
// imported snapshot has none, and then nothing is compared.
// A policy says it in its registration (PolicyInfo::models_torch_version, "2.11"); policies that
// model no PyTorch release leave it empty, and nothing is compared for them either.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memreplay {

struct PolicyInfo;

// The trace header key (in TraceHeader.allocator_settings) that holds torch.__version__.
inline constexpr std::string_view kTorchVersionSetting = "torch_version";

struct TorchVersion {
  int major = 0;
  int minor = 0;
  bool operator==(const TorchVersion&) const = default;
  auto operator<=>(const TorchVersion&) const = default;
};

// "2.13.0+cu128" -> {2, 13}; "2.11" -> {2, 11}; nullopt for text that does not start MAJOR.MINOR.
std::optional<TorchVersion> parse_torch_version(std::string_view text);
std::string to_string(TorchVersion version);  // "2.13"

// The PyTorch release the policy of `policy_spec` ("NAME[:OPTIONS]") models, as registered ("2.11");
// empty when the policy models none or is not registered.
std::string models_torch_version(std::string_view policy_spec);

// The warning for replaying a trace recorded under torch `trace_version` (the header's text) with
// `policy_spec`, or nullopt when there is nothing to say: the policy models no PyTorch release,
// the trace names no parseable version, or both have the same major.minor. It names both versions
// and the registered policy that models the trace's release, when one does (pytorch@VERSION).
std::optional<std::string> torch_version_mismatch(std::string_view trace_version, std::string_view policy_spec);
// The same over `policies` instead of the registry's table.
std::optional<std::string> torch_version_mismatch(std::string_view trace_version, std::string_view policy_spec,
                                                  const std::vector<PolicyInfo>& policies);

}  // namespace memreplay
