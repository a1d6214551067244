// Parses PYTORCH_CUDA_ALLOC_CONF for the pytorch policy through the shared option parser
// (policies/detail/policy_options.h: PyTorch's tokenizer), then one check per key (the rules are
// listed in alloc_config.h). Stricter than PyTorch only about syntax it would silently misread (a
// missing ':' or ',').
#include "policies/pytorch/alloc_config.h"

#include <algorithm>
#include <bit>
#include <vector>

#include "policies/detail/policy_options.h"
#include "policies/registry.h"

namespace memreplay::pytorch {
namespace {

using detail::Booleans;
using detail::PolicyOption;
using detail::PolicyOptions;

constexpr uint64_t kMinLargeAllocMiB = 10;  // large_segment_size_mb must exceed kMinLargeAlloc

// max_split_size_mb / max_non_split_rounding_mb: at least the large segment size, in MiB.
uint64_t parse_mib_at_least(const PolicyOptions& options, const PolicyOption& entry, uint64_t min_mib) {
  const uint64_t mib = options.to_unsigned(entry);
  if (mib < min_mib)
    options.fail(entry, std::to_string(mib) + " is too small (must be >= " + std::to_string(min_mib) + ")");
  return std::min(mib, std::numeric_limits<uint64_t>::max() / kMiB) * kMiB;
}

void parse_roundup(const PolicyOptions& options, const PolicyOption& entry, AllocConfig& config) {
  auto& table = config.roundup_power2_divisions;
  if (!entry.is_list) {
    const uint64_t divisions = options.to_unsigned(entry);
    if (!std::has_single_bit(divisions))
      options.fail(entry, "divisions must be a power of 2, got '" + entry.value + "'");
    table.fill(divisions);
    return;
  }
  const auto& list = entry.list;
  bool first = true;
  size_t last_index = 0;
  for (size_t i = 0; i < list.size();) {
    if (i + 2 >= list.size() || list[i + 1] != ":")
      options.fail(entry, "expected [interval_mb:divisions, ..., >:divisions]");
    const std::string& bound = list[i];
    const uint64_t divisions = options.to_unsigned(entry, list[i + 2]);
    if (divisions != 0 && !std::has_single_bit(divisions))
      options.fail(entry, "divisions must be 0 or a power of 2, got '" + list[i + 2] + "'");
    if (bound == ">") {
      // 2.11: from the interval after the last listed one (older parsers overwrote that one too).
      for (size_t k = last_index + 1; k < table.size(); ++k) table[k] = divisions;
    } else {
      const uint64_t mib = options.to_unsigned(entry, bound);
      if (!std::has_single_bit(mib)) options.fail(entry, "intervals must be powers of 2 (MiB), got '" + bound + "'");
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
      if (list[i] != ",") options.fail(entry, "expected ',' between intervals, got '" + list[i] + "'");
      ++i;
      if (i >= list.size()) options.fail(entry, "trailing ',' in the list");
    }
  }
}

void parse_backend(const PolicyOptions& options, const PolicyOption& entry) {
  const std::string& backend = options.scalar(entry);
  if (backend == "native") return;
  if (backend == "cudaMallocAsync")
    options.fail(entry, "cudaMallocAsync is a different allocator: use the cuda_async policy");
  options.fail(entry, "unknown backend '" + backend + "' (native or cudaMallocAsync)");
}

}  // namespace

AllocConfig parse_alloc_config(std::string_view conf) {
  const PolicyOptions options(
      "pytorch", conf,
      {"large_segment_size_mb", "max_split_size_mb", "max_non_split_rounding_mb", "roundup_power2_divisions",
       "garbage_collection_threshold", "expandable_segments", "per_process_memory_fraction", "backend",
       "release_lock_on_cudamalloc", "pinned_use_cuda_host_register", "pinned_num_register_threads",
       "pinned_reserve_segment_size_mb", "pinned_use_background_threads", "graph_capture_record_stream_reuse"});
  AllocConfig config;

  // large_segment_size_mb first: it is the lower bound of the two sizes below and the default
  // of max_non_split_rounding_mb.
  for (const PolicyOption& entry : options.entries()) {
    if (entry.key != "large_segment_size_mb") continue;
    const uint64_t mib = options.to_unsigned(entry);
    if (mib <= kMinLargeAllocMiB) options.fail(entry, std::to_string(mib) + " is too small (must be > 10)");
    config.large_segment_size = std::min(mib, std::numeric_limits<uint64_t>::max() / kMiB) * kMiB;
  }
  config.max_non_split_rounding_size = config.large_segment_size;
  const uint64_t min_split_mib = config.large_segment_size / kMiB;

  for (const PolicyOption& entry : options.entries()) {
    const std::string& key = entry.key;
    if (key == "large_segment_size_mb") {
      continue;
    } else if (key == "max_split_size_mb") {
      config.max_split_size = parse_mib_at_least(options, entry, min_split_mib);
    } else if (key == "max_non_split_rounding_mb") {
      config.max_non_split_rounding_size = parse_mib_at_least(options, entry, min_split_mib);
    } else if (key == "roundup_power2_divisions") {
      parse_roundup(options, entry, config);
    } else if (key == "garbage_collection_threshold") {
      const double threshold = options.to_number(entry);
      if (!(threshold > 0.0 && threshold < 1.0)) options.fail(entry, entry.value + " is outside (0.0, 1.0)");
      config.garbage_collection_threshold = threshold;
    } else if (key == "expandable_segments") {
      config.expandable_segments = options.to_bool(entry, Booleans::python);
    } else if (key == "per_process_memory_fraction") {
      const double fraction = options.to_number(entry);
      // 0 would leave the process no memory at all: every allocation an OOM, not a setting to replay.
      if (!(fraction > 0.0 && fraction <= 1.0)) options.fail(entry, entry.value + " is outside (0.0, 1.0]");
      config.per_process_memory_fraction = fraction;
    } else if (key == "backend") {
      parse_backend(options, entry);
    } else if (key == "pinned_num_register_threads") {
      const uint64_t threads = options.to_unsigned(entry);
      if (!std::has_single_bit(threads) || threads > 128)
        options.fail(entry, "must be a power of 2 and at most 128, got " + entry.value);
    } else if (key == "pinned_reserve_segment_size_mb") {
      if (options.to_unsigned(entry) == 0) options.fail(entry, "must be greater than 0");
    } else {
      // release_lock_on_cudamalloc, pinned_use_*, graph_capture_record_stream_reuse: validated,
      // no effect on a single-threaded replay of device memory.
      options.to_bool(entry, Booleans::python);
    }
  }
  return config;
}

}  // namespace memreplay::pytorch
