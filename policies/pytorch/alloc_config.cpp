// Parses PYTORCH_CUDA_ALLOC_CONF for the pytorch policy: PyTorch's tokenizer, then one check per
// key (the rules are listed in alloc_config.h). Stricter than PyTorch only about syntax it would
// silently misread (a missing ':' or ',').
#include "policies/pytorch/alloc_config.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <vector>

#include "policies/registry.h"

namespace memreplay::pytorch {
namespace {

constexpr uint64_t kMinLargeAllocMiB = 10;  // large_segment_size_mb must exceed kMinLargeAlloc

const char* const kValidKeys =
    "large_segment_size_mb, max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, "
    "garbage_collection_threshold, expandable_segments, per_process_memory_fraction, backend, "
    "release_lock_on_cudamalloc, pinned_use_cuda_host_register, pinned_num_register_threads, "
    "pinned_reserve_segment_size_mb, pinned_use_background_threads, graph_capture_record_stream_reuse";

[[noreturn]] void fail(std::string_view key, const std::string& why) {
  throw PolicySpecError("pytorch option " + std::string(key) + ": " + why);
}

bool is_special(std::string_view token) {
  return token == "," || token == ":" || token == "[" || token == "]";
}

// PyTorch's ConfigTokenizer: `, : [ ]` are tokens of their own, whitespace is dropped.
std::vector<std::string> tokenize(std::string_view conf) {
  std::vector<std::string> tokens;
  std::string buffer;
  for (const char ch : conf) {
    if (ch == ',' || ch == ':' || ch == '[' || ch == ']') {
      if (!buffer.empty()) tokens.push_back(std::move(buffer));
      buffer.clear();
      tokens.emplace_back(1, ch);
    } else if (!std::isspace(static_cast<unsigned char>(ch))) {
      buffer += ch;
    }
  }
  if (!buffer.empty()) tokens.push_back(std::move(buffer));
  return tokens;
}

// One `key:value` or `key:[...]` entry; `list` holds the tokens between the brackets.
struct Entry {
  std::string key;
  std::string value;
  bool is_list = false;
  std::vector<std::string> list;
};

std::vector<Entry> split_entries(const std::vector<std::string>& tokens) {
  std::vector<Entry> entries;
  size_t i = 0;
  while (i < tokens.size()) {
    Entry entry;
    entry.key = tokens[i];
    if (is_special(entry.key))
      throw PolicySpecError("pytorch options: expected an option name, got '" + entry.key + "'");
    if (i + 1 >= tokens.size() || tokens[i + 1] != ":") fail(entry.key, "expected ':' and a value");
    if (i + 2 >= tokens.size() || tokens[i + 2] == "," || tokens[i + 2] == ":" || tokens[i + 2] == "]")
      fail(entry.key, "missing value");
    i += 2;
    if (tokens[i] == "[") {
      entry.is_list = true;
      ++i;
      while (i < tokens.size() && tokens[i] != "]") entry.list.push_back(tokens[i++]);
      if (i >= tokens.size()) fail(entry.key, "missing closing ']'");
    } else {
      entry.value = tokens[i];
    }
    ++i;  // past the value or the ']'
    if (i < tokens.size()) {
      if (tokens[i] != ",") fail(entry.key, "expected ',' after the value, got '" + tokens[i] + "'");
      ++i;
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

uint64_t to_unsigned(const Entry& entry, std::string_view token) {
  uint64_t value = 0;
  const auto* end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  if (token.empty() || ec != std::errc{} || ptr != end)
    fail(entry.key, "'" + std::string(token) + "' is not a non-negative integer");
  return value;
}

double to_double(const Entry& entry) {
  double value = 0;
  const auto* end = entry.value.data() + entry.value.size();
  const auto [ptr, ec] = std::from_chars(entry.value.data(), end, value);
  if (entry.value.empty() || ec != std::errc{} || ptr != end)
    fail(entry.key, "'" + entry.value + "' is not a number");
  return value;
}

bool to_bool(const Entry& entry) {
  if (entry.value == "True") return true;
  if (entry.value == "False") return false;
  fail(entry.key, "expected True or False, got '" + entry.value + "'");
}

const std::string& scalar(const Entry& entry) {
  if (entry.is_list) fail(entry.key, "takes a single value, not a list");
  return entry.value;
}

// max_split_size_mb / max_non_split_rounding_mb: at least the large segment size, in MiB.
uint64_t parse_mib_at_least(const Entry& entry, uint64_t min_mib) {
  const uint64_t mib = to_unsigned(entry, scalar(entry));
  if (mib < min_mib)
    fail(entry.key, std::to_string(mib) + " is too small (must be >= " + std::to_string(min_mib) + ")");
  return std::min(mib, std::numeric_limits<uint64_t>::max() / kMiB) * kMiB;
}

void parse_roundup(const Entry& entry, AllocConfig& config) {
  auto& table = config.roundup_power2_divisions;
  if (!entry.is_list) {
    const uint64_t divisions = to_unsigned(entry, entry.value);
    if (!std::has_single_bit(divisions)) fail(entry.key, "divisions must be a power of 2, got " + entry.value);
    table.fill(divisions);
    return;
  }
  const auto& list = entry.list;
  bool first = true;
  size_t last_index = 0;
  for (size_t i = 0; i < list.size();) {
    if (i + 2 >= list.size() || list[i + 1] != ":")
      fail(entry.key, "expected [interval_mb:divisions, ..., >:divisions]");
    const std::string& bound = list[i];
    const uint64_t divisions = to_unsigned(entry, list[i + 2]);
    if (divisions != 0 && !std::has_single_bit(divisions))
      fail(entry.key, "divisions must be 0 or a power of 2, got " + list[i + 2]);
    if (bound == ">") {
      // 2.11: from the interval after the last listed one (older parsers overwrote that one too).
      for (size_t k = last_index + 1; k < table.size(); ++k) table[k] = divisions;
    } else {
      const uint64_t mib = to_unsigned(entry, bound);
      if (!std::has_single_bit(mib)) fail(entry.key, "intervals must be powers of 2 (MiB), got " + bound);
      const size_t index = std::min<size_t>(static_cast<size_t>(std::bit_width(mib) - 1), table.size() - 1);
      if (first) {
        std::fill(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(index), divisions);
        first = false;
      }
      table[index] = divisions;
      last_index = index;
    }
    i += 3;
    if (i < list.size()) {
      if (list[i] != ",") fail(entry.key, "expected ',' between intervals, got '" + list[i] + "'");
      ++i;
      if (i >= list.size()) fail(entry.key, "trailing ',' in the list");
    }
  }
}

void parse_backend(const Entry& entry) {
  const std::string& backend = scalar(entry);
  if (backend == "native") return;
  if (backend == "cudaMallocAsync")
    fail(entry.key, "cudaMallocAsync is a different allocator: use the cuda_async policy");
  fail(entry.key, "unknown backend '" + backend + "' (native or cudaMallocAsync)");
}

}  // namespace

uint64_t AllocConfig::divisions_for(uint64_t bytes) const {
  // Interval index: floor(log2 bytes) - 20, clamped to [0, 15].
  const auto log_size = static_cast<size_t>(std::bit_width(bytes | 1) - 1);
  const size_t index = log_size > 20 ? std::min(log_size - 20, kRoundUpPowerOfTwoIntervals - 1) : 0;
  return roundup_power2_divisions[index];
}

AllocConfig parse_alloc_config(std::string_view conf) {
  const std::vector<Entry> entries = split_entries(tokenize(conf));
  AllocConfig config;

  // large_segment_size_mb first: it is the lower bound of the two sizes below and the default
  // of max_non_split_rounding_mb.
  for (const Entry& entry : entries) {
    if (entry.key != "large_segment_size_mb") continue;
    const uint64_t mib = to_unsigned(entry, scalar(entry));
    if (mib <= kMinLargeAllocMiB) fail(entry.key, std::to_string(mib) + " is too small (must be > 10)");
    config.large_segment_size = std::min(mib, std::numeric_limits<uint64_t>::max() / kMiB) * kMiB;
  }
  config.max_non_split_rounding_size = config.large_segment_size;
  const uint64_t min_split_mib = config.large_segment_size / kMiB;

  for (const Entry& entry : entries) {
    const std::string& key = entry.key;
    if (key == "large_segment_size_mb") {
      continue;
    } else if (key == "max_split_size_mb") {
      config.max_split_size = parse_mib_at_least(entry, min_split_mib);
    } else if (key == "max_non_split_rounding_mb") {
      config.max_non_split_rounding_size = parse_mib_at_least(entry, min_split_mib);
    } else if (key == "roundup_power2_divisions") {
      parse_roundup(entry, config);
    } else if (key == "garbage_collection_threshold") {
      scalar(entry);
      const double threshold = to_double(entry);
      if (!(threshold > 0.0 && threshold < 1.0)) fail(key, entry.value + " is outside (0.0, 1.0)");
      config.garbage_collection_threshold = threshold;
    } else if (key == "expandable_segments") {
      scalar(entry);
      config.expandable_segments = to_bool(entry);
    } else if (key == "per_process_memory_fraction") {
      scalar(entry);
      const double fraction = to_double(entry);
      if (!(fraction >= 0.0 && fraction <= 1.0)) fail(key, entry.value + " is outside [0.0, 1.0]");
      config.per_process_memory_fraction = fraction;
    } else if (key == "backend") {
      parse_backend(entry);
    } else if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register" ||
               key == "pinned_use_background_threads" || key == "graph_capture_record_stream_reuse") {
      scalar(entry);
      to_bool(entry);  // validated, no effect on a single-threaded replay of device memory
    } else if (key == "pinned_num_register_threads") {
      const uint64_t threads = to_unsigned(entry, scalar(entry));
      if (!std::has_single_bit(threads) || threads > 128)
        fail(key, "must be a power of 2 and at most 128, got " + entry.value);
    } else if (key == "pinned_reserve_segment_size_mb") {
      if (to_unsigned(entry, scalar(entry)) == 0) fail(key, "must be greater than 0");
    } else {
      throw PolicySpecError("pytorch: unknown option '" + key + "' (valid: " + kValidKeys + ")");
    }
  }
  return config;
}

}  // namespace memreplay::pytorch
