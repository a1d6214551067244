#include "replayer/live/live_trace.h"

#include <stdexcept>
#include <vector>

#include "recorder/live/memreplay_record_loader.h"

namespace memreplay {

LiveTrace::LiveTrace(const std::string& path, const std::string& record_library, const LiveTraceHeader& header)
    : path_(path), device_(header.device_index), library_(std::make_unique<memreplay_record_library>()) {
  if (const std::string error = library_->load(record_library); !error.empty()) throw std::runtime_error(error);
  const std::string device =
      std::to_string(header.device_index) + ";" + std::to_string(header.total_memory) + ";" + header.device_name;
  std::vector<const char*> pairs = {"source",       "memreplay-live",           "device",
                                    device.c_str(), "setting:memreplay_policy", header.policy_spec.c_str()};
  const std::string cap = header.cap ? std::to_string(header.device_index) + ";" + std::to_string(*header.cap) : "";
  if (header.cap) pairs.insert(pairs.end(), {"device_cap", cap.c_str()});
  char error[512] = {};
  recorder_ = library_->open(path.c_str(), pairs.data(), pairs.size() / 2, nullptr, error, sizeof error);
  if (recorder_ == nullptr) throw std::runtime_error("cannot record to " + path + ": " + error);
}

LiveTrace::~LiveTrace() {
  close();
  if (recorder_ != nullptr) library_->destroy(recorder_);
}

void LiveTrace::record(uint32_t kind, uint64_t address, uint64_t size, StreamId stream, PoolId pool, uint64_t aux) {
  if (closed_) return;
  library_->record_in_pool(recorder_, kind, device_, stream, address, size, 0, aux, 0, pool);
}

void LiveTrace::on_alloc(uint64_t address, uint64_t requested, StreamId stream, PoolId pool) {
  record(MEMREPLAY_ALLOC, address, requested, stream, pool);
}

void LiveTrace::on_free(uint64_t address, uint64_t requested, StreamId stream, PoolId pool) {
  record(MEMREPLAY_FREE_REQUESTED, address, requested, stream, pool);
  record(MEMREPLAY_FREE_COMPLETED, address, requested, stream, pool);
}

void LiveTrace::on_empty_cache() { record(MEMREPLAY_EMPTY_CACHE, 0, 0, 0, 0); }

void LiveTrace::on_name_pool(PoolId pool, std::pair<uint64_t, uint64_t> torch_id, std::string_view kind) {
  if (closed_) return;
  const std::string id = std::to_string(pool);
  const std::string torch = std::to_string(torch_id.first) + "," + std::to_string(torch_id.second);
  const std::string kind_text(kind);
  const char* pairs[] = {"pool", id.c_str(), "torch_pool_id", torch.c_str(), "kind", kind_text.c_str()};
  library_->annotate(recorder_, device_, pairs, 3);
}

void LiveTrace::on_release_pool(PoolId pool) { record(MEMREPLAY_SEGMENT_FREE, 0, 0, 0, pool); }

void LiveTrace::on_oom(uint64_t requested, StreamId stream, uint64_t free_bytes) {
  record(MEMREPLAY_OOM, 0, requested, stream, 0, free_bytes);
}

bool LiveTrace::close() {
  if (recorder_ == nullptr || closed_.exchange(true)) return false;
  return library_->close(recorder_, nullptr) != 0;
}

uint64_t LiveTrace::dropped() const {
  memreplay_stats stats{};
  library_->get_stats(recorder_, &stats);
  return stats.dropped;
}

}  // namespace memreplay
