// memreplay's PyTorch live recorder, the native half: a trace tracker on PyTorch's CUDA caching
// allocator (c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker) that hands every trace
// entry to libmemreplay_record.so, which writes the .mrt (recorder/live/memreplay_record.h).
//
// Built against the user's torch by torch.utils.cpp_extension (see _native.py); the recording
// library is loaded with dlopen, so this extension carries no protobuf, zstd or memreplay code
// of its own and cannot clash with torch's.
//
// The tracker runs under the allocator's lock for every entry, whether or not
// _record_memory_history is on: it only copies the entry into the recorder's per-thread buffer
// (~tens of ns) and never takes the GIL. When history is on with stacks, the entry carries a
// captured traceback; it is kept (one allocation) and symbolized later on the recorder's writer
// thread, in batches, by torch::symbolize, which takes the GIL only for the Python frames.
#include <Python.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

// Stacks need torch::symbolize; a torch that does not ship its header records without them.
#if __has_include(<torch/csrc/profiler/combined_traceback.h>)
#include <torch/csrc/profiler/combined_traceback.h>
#define MEMREPLAY_HAVE_SYMBOLIZE 1
#else
#define MEMREPLAY_HAVE_SYMBOLIZE 0
#endif

#include <atomic>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "memreplay_record_loader.h"
#include "pool_kind.h"

namespace py = pybind11;

namespace {

// The entry type, whichever namespace this torch declares it in (c10::CachingDeviceAllocator since
// about 2.8, c10::cuda::CUDACachingAllocator before): the tracker's own argument type.
template <typename Tracker>
struct TrackerArgument;
template <typename Result, typename Argument>
struct TrackerArgument<std::function<Result(Argument)>> {
  using type = std::remove_cv_t<std::remove_reference_t<Argument>>;
};
using TraceEntry = TrackerArgument<c10::cuda::CUDACachingAllocator::AllocatorTraceTracker>::type;
using Context = std::shared_ptr<c10::GatheredContext>;

// The C API of libmemreplay_record.so, found with dlsym once load() has checked its format.
memreplay_record_library g_api;

// The recording the tracker feeds; nullptr while none runs. Trackers cannot be detached, so the
// one attached stays and checks this.
std::atomic<memreplay_recorder*> g_current{nullptr};
// Whether allocations made under a CUDA graph capture are flagged (the header says so).
bool g_flags_captures = false;
bool g_attached = false;

void load_library(const std::string& path) {
  if (g_api.open != nullptr) return;
  memreplay_record_library api;
  if (const std::string error = api.load(path); !error.empty()) throw std::runtime_error(error);
  g_api = api;
  uint32_t minor = 0;
  g_api.format_version(&minor);
  g_flags_captures = minor >= 3;  // a library that knows MEMREPLAY_FLAG_CAPTURED (format 1.3)
}

memreplay_recorder* as_recorder(uintptr_t handle) { return reinterpret_cast<memreplay_recorder*>(handle); }

// PyTorch's action -> our EventKind (0: an action this version of memreplay does not know).
uint32_t kind_of(TraceEntry::Action action) {
  switch (action) {
    case TraceEntry::ALLOC: return MEMREPLAY_ALLOC;
    case TraceEntry::FREE_REQUESTED: return MEMREPLAY_FREE_REQUESTED;
    case TraceEntry::FREE_COMPLETED: return MEMREPLAY_FREE_COMPLETED;
    case TraceEntry::SEGMENT_ALLOC: return MEMREPLAY_SEGMENT_ALLOC;
    case TraceEntry::SEGMENT_FREE: return MEMREPLAY_SEGMENT_FREE;
    case TraceEntry::SEGMENT_MAP: return MEMREPLAY_SEGMENT_MAP;
    case TraceEntry::SEGMENT_UNMAP: return MEMREPLAY_SEGMENT_UNMAP;
    case TraceEntry::SNAPSHOT: return MEMREPLAY_SNAPSHOT;
    case TraceEntry::OOM: return MEMREPLAY_OOM;
    default: return 0;
  }
}

// The entry's memory pool as a small id (0: the default pool), where this torch's TraceEntry
// carries one (mempool_, a MempoolId_t pair). Ids go to pools in the order they first appear;
// each new one is announced with an annotation (pool, torch_pool_id, kind: pool_kind.h).
template <typename Entry, typename = void>
struct HasMempool : std::false_type {};
template <typename Entry>
struct HasMempool<Entry, std::void_t<decltype(std::declval<const Entry&>().mempool_.second)>> : std::true_type {};

template <typename Entry>
uint32_t pool_of(memreplay_recorder* recorder, const Entry& entry) {
  if constexpr (HasMempool<Entry>::value) {
    const uint64_t first = entry.mempool_.first, second = entry.mempool_.second;
    if (first == 0 && second == 0) return 0;
    // Under the allocator's lock: a small table, no allocation on the common path.
    static constexpr size_t kMaxPools = 4096;
    static std::pair<uint64_t, uint64_t> pools[kMaxPools];
    static size_t count = 0;
    for (size_t i = 0; i < count; ++i)
      if (pools[i].first == first && pools[i].second == second) return static_cast<uint32_t>(i + 1);
    if (count == kMaxPools) return 0;
    pools[count++] = {first, second};
    const std::string id = std::to_string(count), torch_id = std::to_string(first) + "," + std::to_string(second);
    const char* kv[] = {"pool",           id.c_str(), "torch_pool_id",
                        torch_id.c_str(), "kind",     memreplay_torch::pool_kind(second)};
    g_api.annotate(recorder, static_cast<uint32_t>(entry.device_), kv, 3);
    return static_cast<uint32_t>(count);
  } else {
    (void)recorder, (void)entry;
    return 0;
  }
}

// MEMREPLAY_FLAG_CAPTURED for an allocation in a private pool while its stream is capturing a
// CUDA graph: PyTorch 2.13 decides its retry chain by it, and a MemPool's pool id looks like a
// graph_pool_handle()'s. The default pool never allocates under a capture; the driver's answer is
// the one PyTorch's allocator itself asks for (is_capture_context).
uint32_t capture_flag(const TraceEntry& entry, uint32_t pool) {
  if (!g_flags_captures || pool == 0 || entry.action_ != TraceEntry::ALLOC) return 0;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(entry.stream_), &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return status == cudaStreamCaptureStatusActive ? MEMREPLAY_FLAG_CAPTURED : 0;
}

// Under the allocator's lock: copy, never block, never throw.
void on_trace_entry(const TraceEntry& entry) noexcept {
  memreplay_recorder* recorder = g_current.load(std::memory_order_acquire);
  if (recorder == nullptr) return;
  const uint32_t kind = kind_of(entry.action_);
  if (kind == 0) return;
  uint64_t address = static_cast<uint64_t>(entry.addr_);
  uint64_t aux = 0;
  if (entry.action_ == TraceEntry::OOM) {  // addr_ holds the device's free bytes
    aux = address;
    address = 0;
  } else if (entry.action_ == TraceEntry::SNAPSHOT) {
    address = 0;
  }
  uint64_t context = 0;
  if (entry.context_) {
    if (auto* kept = new (std::nothrow) Context(entry.context_)) context = reinterpret_cast<uint64_t>(kept);
  }
  uint32_t pool = 0;
  try {
    pool = pool_of(recorder, entry);
  } catch (...) {  // std::to_string may throw on allocation failure: the default pool then
  }
  const int kept = g_api.record_in_pool(
      recorder, kind, static_cast<uint32_t>(entry.device_), reinterpret_cast<uint64_t>(entry.stream_), address,
      static_cast<uint64_t>(entry.size_), capture_flag(entry, pool), aux, context, pool);
  if (!kept && context != 0) delete reinterpret_cast<Context*>(context);  // a traceback defers its GIL work
}

bool python_alive() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

// On the writer thread: tracebacks -> frames, innermost first.
void resolve_stacks(void*, const uint64_t* tokens, size_t count, memreplay_emit_stack_fn emit, void* emit_context) {
  std::vector<std::unique_ptr<Context>> contexts;
  contexts.reserve(count);
  for (size_t i = 0; i < count; ++i) contexts.emplace_back(reinterpret_cast<Context*>(tokens[i]));
  if (!python_alive()) {
    // Python's objects may be gone: leave the tracebacks alone rather than touch them.
    for (auto& c : contexts) (void)c.release();
    return;
  }
#if MEMREPLAY_HAVE_SYMBOLIZE
  try {
    std::vector<torch::CapturedTraceback*> tracebacks;
    std::vector<size_t> index;
    for (size_t i = 0; i < count; ++i)
      if (auto* tb = dynamic_cast<torch::CapturedTraceback*>(contexts[i]->get())) {
        tracebacks.push_back(tb);
        index.push_back(i);
      }
    if (tracebacks.empty()) return;
    const torch::SymbolizedTracebacks symbols = torch::symbolize(tracebacks);
    std::vector<memreplay_frame> frames;
    for (size_t k = 0; k < tracebacks.size() && k < symbols.tracebacks.size(); ++k) {
      frames.clear();
      for (uint64_t f : symbols.tracebacks[k]) {
        const auto& frame = symbols.all_frames.at(f);
        frames.push_back({frame.filename.c_str(), static_cast<uint32_t>(frame.lineno), frame.funcname.c_str()});
      }
      emit(emit_context, index[k], frames.data(), frames.size());
    }
  } catch (...) {
    // No stacks for this batch; the events are written all the same.
  }
#else
  (void)emit, (void)emit_context;
#endif
}

void discard_stacks(void*, const uint64_t* tokens, size_t count) {
  if (!python_alive()) return;
  for (size_t i = 0; i < count; ++i) delete reinterpret_cast<Context*>(tokens[i]);
}

uintptr_t open_trace(const std::string& path, const std::vector<std::pair<std::string, std::string>>& header,
                     uint32_t events_per_chunk, uint32_t flush_interval_ms, uint32_t thread_buffer_events) {
  if (g_api.open == nullptr) throw std::runtime_error("memreplay: load() the recording library first");
  std::vector<const char*> pairs;
  for (const auto& [key, value] : header) {
    pairs.push_back(key.c_str());
    pairs.push_back(value.c_str());
  }
  if (g_flags_captures) {
    pairs.push_back("captures_flagged");
    pairs.push_back("1");
  }
  memreplay_options options{events_per_chunk, flush_interval_ms, thread_buffer_events};
  char error[512] = "";
  memreplay_recorder* r = g_api.open(path.c_str(), pairs.data(), pairs.size() / 2, &options, error, sizeof error);
  if (r == nullptr) throw std::runtime_error(error);
  g_api.set_resolver(r, resolve_stacks, discard_stacks, nullptr);
  return reinterpret_cast<uintptr_t>(r);
}

// Attaches the tracker to every device's allocator (once per process; CUDA must be initialized).
void attach() {
  if (g_attached) return;
  c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(&on_trace_entry);
  g_attached = true;
}

py::dict stats_of(memreplay_stats s) {
  py::dict d;
  d["recorded"] = s.recorded;
  d["written"] = s.written;
  d["dropped"] = s.dropped;
  d["failed"] = s.failed != 0;
  return d;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "memreplay's PyTorch live recorder (native half); use memreplay.torch";
  m.def("load", &load_library, "Load libmemreplay_record.so from this path");
  m.def("open", &open_trace, "Create a trace; returns a handle", py::arg("path"), py::arg("header"),
        py::arg("events_per_chunk"), py::arg("flush_interval_ms"), py::arg("thread_buffer_events"));
  m.def("attach", &attach, "Attach the trace tracker to PyTorch's CUDA caching allocator");
  m.def(
      "set_current", [](uintptr_t handle) { g_current.store(as_recorder(handle), std::memory_order_release); },
      "The recording the tracker feeds (0: none)");
  m.def(
      "record",
      [](uintptr_t handle, uint32_t kind, uint32_t device, uint64_t stream, uint64_t address, uint64_t size,
         uint32_t flags, uint64_t aux) {
        return g_api.record(as_recorder(handle), kind, device, stream, address, size, flags, aux, 0) != 0;
      },
      "Record one event from Python (state at start, empty_cache)");
  m.def("annotate",
        [](uintptr_t handle, uint32_t device, const std::vector<std::pair<std::string, std::string>>& metadata) {
          std::vector<const char*> kv;
          for (const auto& [k, v] : metadata) {
            kv.push_back(k.c_str());
            kv.push_back(v.c_str());
          }
          return g_api.annotate(as_recorder(handle), device, kv.data(), metadata.size()) != 0;
        });
  // Flushing and closing wait for the writer thread, which may need the GIL to symbolize stacks.
  m.def(
      "flush", [](uintptr_t handle) { return g_api.flush(as_recorder(handle)) != 0; },
      py::call_guard<py::gil_scoped_release>());
  m.def("close", [](uintptr_t handle) {
    memreplay_stats s{};
    {
      py::gil_scoped_release release;
      g_api.close(as_recorder(handle), &s);
    }
    return stats_of(s);
  });
  m.def("stats", [](uintptr_t handle) {
    memreplay_stats s{};
    g_api.get_stats(as_recorder(handle), &s);
    return stats_of(s);
  });
}
