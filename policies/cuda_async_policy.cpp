// cuda_async: PyTorch's backend:cudaMallocAsync (c10/cuda/CUDAMallocAsyncAllocator.cpp), which
// hands every request straight to the driver's stream-ordered pool:
//   allocate(n, stream) -> pool_malloc_async(n, stream) on a dedicated pool; no rounding, no
//                          splitting, no caching of our own, no retry: a failure is an OOM.
//   free(address)       -> pool_free_async on the stream the block was allocated on.
//   empty_cache()       -> synchronize + cudaMemPoolTrimTo(pool, 0).
//   stream events       -> forwarded: the pool follows event dependencies for cross-stream reuse.
// The pool's reserved/used high-water marks (ReservedMemHigh / UsedMemHigh, what PyTorch reports
// as reserved/allocated peak) are measured by the Device; stats() repeats them. The pool itself
// is real on CudaDevice and SimAsyncPool's documented model on SimDevice.
// Options (True/False or bytes): release_threshold (default UINT64_MAX, as PyTorch sets it),
// reuse_follow_event_dependencies, reuse_allow_opportunistic, reuse_allow_internal_dependencies
// (default True, the driver's defaults).
// Capacity: the Device caps what the pool reserves (as for every policy: the memory this process
// may hold). PyTorch's own check for this backend, used + n > limit, is weaker and implied by it.
#include <charconv>
#include <string>
#include <unordered_map>

#include "policies/registry.h"

namespace memreplay {
namespace {

class CudaAsyncPolicy final : public Policy {
 public:
  explicit CudaAsyncPolicy(Device& device) : device_(device) {}

  std::optional<Block> allocate(uint64_t bytes, StreamId stream) override {
    const auto address = device_.pool_malloc_async(bytes, stream);
    if (!address) return std::nullopt;
    streams_[*address] = stream;
    // The pool hands out exactly what was asked for (UsedMem counts requested bytes).
    return Block{*address, bytes};
  }

  void free(uint64_t address) noexcept override {
    const auto it = streams_.find(address);
    if (it == streams_.end()) return;
    device_.pool_free_async(address, it->second);
    streams_.erase(it);
  }

  void empty_cache() override { device_.pool_trim(0); }

  void on_stream_event(StreamId stream, uint64_t cuda_event, bool is_wait) override {
    device_.stream_event(stream, cuda_event, is_wait);
  }

  std::map<std::string, uint64_t> stats() const override {
    const DeviceCounters& c = device_.counters();
    return {{"pool_reserved_mem_high", c.pool_reserved_peak},
            {"pool_used_mem_high", c.pool_used_peak}};
  }

 private:
  Device& device_;
  std::unordered_map<uint64_t, StreamId> streams_;  // live block -> stream it was allocated on
};

bool parse_bool(std::string_view key, std::string_view value) {
  if (value == "True" || value == "true") return true;
  if (value == "False" || value == "false") return false;
  throw PolicySpecError("cuda_async option '" + std::string(key) + "' takes True or False (got '" +
                        std::string(value) + "')");
}

uint64_t parse_bytes(std::string_view key, std::string_view value) {
  uint64_t bytes = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), bytes);
  if (ec != std::errc() || end != value.data() + value.size())
    throw PolicySpecError("cuda_async option '" + std::string(key) + "' takes a number of bytes (got '" +
                          std::string(value) + "')");
  return bytes;
}

PoolConfig parse_options(std::string_view options) {
  PoolConfig config;
  while (!options.empty()) {
    const auto comma = options.find(',');
    const std::string_view item = options.substr(0, comma);
    options = comma == std::string_view::npos ? std::string_view{} : options.substr(comma + 1);
    const auto colon = item.find(':');
    if (colon == std::string_view::npos)
      throw PolicySpecError("cuda_async option '" + std::string(item) + "' needs a value (KEY:VALUE)");
    const std::string_view key = item.substr(0, colon);
    const std::string_view value = item.substr(colon + 1);
    if (key == "release_threshold")
      config.release_threshold = parse_bytes(key, value);
    else if (key == "reuse_follow_event_dependencies")
      config.reuse_follow_event_dependencies = parse_bool(key, value);
    else if (key == "reuse_allow_opportunistic")
      config.reuse_allow_opportunistic = parse_bool(key, value);
    else if (key == "reuse_allow_internal_dependencies")
      config.reuse_allow_internal_dependencies = parse_bool(key, value);
    else
      throw PolicySpecError("unknown cuda_async option '" + std::string(key) +
                            "' (valid: release_threshold, reuse_follow_event_dependencies, "
                            "reuse_allow_opportunistic, reuse_allow_internal_dependencies)");
  }
  return config;
}

std::unique_ptr<Policy> make_cuda_async(std::string_view options, Device& device) {
  const PoolConfig config = parse_options(options);
  if (!device.configure_pool(config))
    throw PolicySpecError("policy 'cuda_async' needs a device with a stream-ordered memory pool");
  return std::make_unique<CudaAsyncPolicy>(device);
}

}  // namespace

MEMREPLAY_REGISTER_POLICY(cuda_async, "cuda_async",
                          "the driver's stream-ordered pool, as PyTorch's backend:cudaMallocAsync",
                          "release_threshold:BYTES (default UINT64_MAX), reuse_follow_event_dependencies:True|False, "
                          "reuse_allow_opportunistic:True|False, reuse_allow_internal_dependencies:True|False",
                          make_cuda_async);

}  // namespace memreplay
