// The one parser of policy options: the text after "NAME:" in a --policy spec, e.g.
//   pytorch:expandable_segments:True,roundup_power2_divisions:[256:1,>:8]
//   cuda_async:release_threshold:1GiB,reuse_allow_opportunistic:false
//
// Syntax (PyTorch's PYTORCH_CUDA_ALLOC_CONF tokenizer, for every policy): comma-separated
// `key:value`, or `key:[tokens]` for a list; `, : [ ]` are tokens of their own; whitespace is
// ignored. Every key must be one the policy lists, else the error names the valid ones.
// Values, each checked by a typed accessor:
//   unsigned  decimal digits
//   number    a decimal (strtod syntax, as std::from_chars reads it)
//   bytes     a plain byte count or a number with a unit, case-insensitive: B, KiB/K, MiB/M,
//             GiB/G, TiB/T (powers of 1024), KB, MB, GB, TB (powers of 1000): 1GiB, 512MiB, 64MB
//             (base/units.h's parse_byte_size, the CLI's parser too)
//   boolean   strict, two spellings:
//               Booleans::python  True | False          (PyTorch's own keys, as PyTorch reads them)
//               Booleans::either  True | False | true | false   (every other key)
//             anything else (yes, 1, TRUE) is refused
// Errors are PolicySpecError, one line: "POLICY option 'KEY': WHY, got 'VALUE'".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memreplay::detail {

enum class Booleans { python, either };

// One `key:value` or `key:[...]` entry.
struct PolicyOption {
  std::string key;
  std::string value;  // the scalar value; empty for a list
  bool is_list = false;
  std::vector<std::string> list;  // the tokens between the brackets, separators included
};

class PolicyOptions {
 public:
  // Splits `options` of policy `policy` and checks every key against `valid_keys`.
  PolicyOptions(std::string_view policy, std::string_view options, std::initializer_list<std::string_view> valid_keys);

  const std::vector<PolicyOption>& entries() const { return entries_; }

  // Typed values of an entry (scalars only); each throws PolicySpecError naming key and value.
  const std::string& scalar(const PolicyOption& option) const;
  uint64_t to_unsigned(const PolicyOption& option) const { return to_unsigned(option, scalar(option)); }
  uint64_t to_unsigned(const PolicyOption& option, std::string_view token) const;  // a list token
  double to_number(const PolicyOption& option) const;
  uint64_t to_bytes(const PolicyOption& option) const;
  bool to_bool(const PolicyOption& option, Booleans spelling) const;

  // "POLICY option 'KEY': WHY" as a PolicySpecError.
  [[noreturn]] void fail(const PolicyOption& option, const std::string& why) const;

 private:
  std::string policy_;
  std::vector<PolicyOption> entries_;
};

}  // namespace memreplay::detail
