// The interposer's recording: started at the first interposed call (never in processes that make
// none, such as the shell or compiler a job runs), configured from the environment that
// `memreplay record` sets:
//   MEMREPLAY_OUTPUT          trace path; a second process of the same run (a worker, an exec'd
//                             child) that finds it taken writes PATH-without-.mrt.<pid>.mrt
//   MEMREPLAY_FLUSH_MS, MEMREPLAY_CHUNK_EVENTS, MEMREPLAY_BUFFER_EVENTS   LiveRecorderOptions
//   MEMREPLAY_MALLOC_EVENTS   "segment" (default) or "alloc" (hooks.h)
//   MEMREPLAY_QUIET           1: no start-up line on stderr (errors are always printed)
// After fork() the child starts over: its own file at its first CUDA call.
#include <cxxabi.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "recorder/interposer/cuda_declarations.h"
#include "recorder/interposer/hooks.h"
#include "recorder/live/live_recorder.h"
#include "recorder/live/process_command_line.h"

namespace memreplay::interposer {
namespace {

constexpr uint64_t kAddressMask = (uint64_t{1} << 48) - 1;

// A call's context token: which API (+1, so never 0) and the caller's return address.
uint64_t context_token(Api api, const void* caller) {
  return ((static_cast<uint64_t>(api) + 1) << 48) | (reinterpret_cast<uint64_t>(caller) & kAddressMask);
}

std::string demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), &std::free);
  return status == 0 && out ? out.get() : name;
}

char hex_digit(unsigned v) { return static_cast<char>(v < 10 ? '0' + v : 'a' + v - 10); }

std::string hex(uint64_t v) {
  std::string s;
  do {
    s.insert(s.begin(), hex_digit(static_cast<unsigned>(v & 15)));
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

// Turns (API, return address, thread) into the three frames of hooks.h, on the writer thread.
class CallerResolver final : public ContextResolver {
 public:
  bool stable_tokens() const override { return true; }

  void resolve(std::span<const Context> contexts, std::vector<std::vector<FrameText>>& frames) override {
    frames.clear();
    for (const Context& c : contexts) {
      const auto api = static_cast<Api>((c.token >> 48) - 1);
      const ApiInfo& info = api_info(api);
      frames.push_back({
          {info.library == Library::runtime ? "<cuda runtime>" : "<cuda driver>", 0, info.symbol},
          caller_frame(c.token & kAddressMask),
          {"", 0, thread_name(c.thread)},
      });
    }
  }

 private:
  const FrameText& caller_frame(uint64_t address) {
    auto [it, inserted] = callers_.try_emplace(address);
    if (!inserted) return it->second;
    Dl_info info{};
    if (address == 0 || dladdr(reinterpret_cast<void*>(address), &info) == 0) {
      it->second = {"?", 0, hex(address)};
    } else {
      const auto base = reinterpret_cast<uint64_t>(info.dli_fbase);
      const auto symbol = reinterpret_cast<uint64_t>(info.dli_saddr);
      it->second.filename = info.dli_fname ? info.dli_fname : "?";
      it->second.name = info.dli_sname ? demangle(info.dli_sname) + "+" + hex(address - symbol) : hex(address - base);
    }
    return it->second;
  }

  const std::string& thread_name(uint32_t tid) {
    auto [it, inserted] = threads_.try_emplace(tid);
    if (!inserted) return it->second;
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/comm");
    std::string comm;
    std::getline(in, comm);
    it->second = "thread " + std::to_string(tid) + (comm.empty() ? "" : " (" + comm + ")");
    return it->second;
  }

  std::map<uint64_t, FrameText> callers_;
  std::map<uint32_t, std::string> threads_;
};

uint32_t env_number(const char* name, uint32_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  return end && *end == '\0' && n > 0 ? static_cast<uint32_t>(n) : fallback;
}

// The first process of a run gets the path itself; others a per-process name beside it.
std::string claim_output(const std::string& requested) {
  const int fd = ::open(requested.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    ::close(fd);
    return requested;
  }
  if (errno != EEXIST) return requested;  // the writer reports the real problem
  const bool mrt = requested.size() > 4 && requested.ends_with(".mrt");
  const std::string stem = mrt ? requested.substr(0, requested.size() - 4) : requested;
  return stem + "." + std::to_string(::getpid()) + ".mrt";
}

template <typename Fn>
Fn driver_function(const char* name) {
  void* h = libcuda_handle();
  return h ? reinterpret_cast<Fn>(real_dlsym(h, name)) : nullptr;
}

void describe_devices(LiveTraceHeader& header) {
  const auto get_count = driver_function<decltype(&cuDeviceGetCount)>("cuDeviceGetCount");
  const auto get = driver_function<decltype(&cuDeviceGet)>("cuDeviceGet");
  const auto get_name = driver_function<decltype(&cuDeviceGetName)>("cuDeviceGetName");
  const auto total_mem = driver_function<decltype(&cuDeviceTotalMem_v2)>("cuDeviceTotalMem_v2");
  int count = 0;
  if (!get_count || !get || get_count(&count) != CUDA_SUCCESS) return;  // not initialized yet
  for (int i = 0; i < count; ++i) {
    CUdevice device = 0;
    if (get(&device, i) != CUDA_SUCCESS) continue;
    LiveTraceHeader::Device d;
    d.index = static_cast<uint32_t>(i);
    char name[256] = "";
    if (get_name && get_name(name, sizeof name, device) == CUDA_SUCCESS) d.name = name;
    size_t bytes = 0;
    if (total_mem && total_mem(&bytes, device) == CUDA_SUCCESS) d.total_memory = bytes;
    header.devices.push_back(std::move(d));
  }
}

// --- the process's recording ----------------------------------------------------------------

std::atomic<LiveRecorder*> g_recorder{nullptr};
std::atomic<bool> g_tried{false};
pthread_mutex_t g_start_mutex = PTHREAD_MUTEX_INITIALIZER;
thread_local bool t_starting = false;

void reset_in_child() {
  g_recorder.store(nullptr);  // the parent's, made inert by its own fork hook
  g_tried.store(false);
  pthread_mutex_init(&g_start_mutex, nullptr);
}

LiveRecorder* start_recording() {
  const char* output = std::getenv("MEMREPLAY_OUTPUT");
  if (output == nullptr || *output == '\0') {
    std::fprintf(stderr, "memreplay: interposer loaded but MEMREPLAY_OUTPUT is not set: not recording\n");
    return nullptr;
  }
  const std::string path = claim_output(output);
  try {
    LiveTraceHeader header;
    header.source = "cuda-interposer";
    header.command_line = process_command_line();
    header.pid = static_cast<uint64_t>(::getpid());
    header.capture_time_ns = LiveRecorder::now_ns();
    describe_devices(header);
    header.allocator_settings["interposer.malloc_events"] = mallocs_as_allocs() ? "alloc" : "segment";
    LiveRecorderOptions options;
    options.flush_interval = std::chrono::milliseconds(env_number("MEMREPLAY_FLUSH_MS", 500));
    options.events_per_chunk = env_number("MEMREPLAY_CHUNK_EVENTS", options.events_per_chunk);
    options.thread_buffer_events = env_number("MEMREPLAY_BUFFER_EVENTS", options.thread_buffer_events);
    options.fill_free_sizes = true;  // cudaFree gives no size
    // Both live as long as the process: the writer still resolves stacks in exit handlers, after
    // static objects would have been destroyed.
    auto* recorder = new LiveRecorder(path, header, options);
    static auto* const resolver = new CallerResolver;
    recorder->set_context_resolver(resolver);
    const char* quiet = std::getenv("MEMREPLAY_QUIET");
    if (!(quiet && *quiet == '1'))
      std::fprintf(stderr, "memreplay: recording the CUDA calls of process %d to %s\n", static_cast<int>(::getpid()),
                   path.c_str());
    return recorder;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "memreplay: cannot record CUDA calls to %s: %s; the program goes on unrecorded\n",
                 path.c_str(), e.what());
    return nullptr;
  }
}

LiveRecorder* recorder() {
  if (LiveRecorder* r = g_recorder.load(std::memory_order_acquire)) return r;
  if (g_tried.load(std::memory_order_acquire) || t_starting) return nullptr;
  t_starting = true;  // a CUDA call made while starting (device queries) is not recorded
  pthread_mutex_lock(&g_start_mutex);
  if (!g_tried.load()) {
    static std::once_flag fork_hook;
    std::call_once(fork_hook, [] { pthread_atfork(nullptr, nullptr, reset_in_child); });
    g_recorder.store(start_recording(), std::memory_order_release);
    g_tried.store(true, std::memory_order_release);
  }
  pthread_mutex_unlock(&g_start_mutex);
  t_starting = false;
  return g_recorder.load(std::memory_order_acquire);
}

uint32_t current_device() {
  using GetDevice = CUresult (*)(CUdevice*);
  static const auto get_device = driver_function<GetDevice>("cuCtxGetDevice");
  CUdevice device = 0;
  if (get_device == nullptr || get_device(&device) != CUDA_SUCCESS) return 0;
  return static_cast<uint32_t>(device);
}

}  // namespace

bool mallocs_as_allocs() noexcept {
  static const bool as_allocs = [] {
    const char* v = std::getenv("MEMREPLAY_MALLOC_EVENTS");
    return v != nullptr && std::strcmp(v, "alloc") == 0;
  }();
  return as_allocs;
}

void record_call(const Call& call) noexcept {
  LiveRecorder* r = recorder();
  if (r == nullptr) return;
  Event e;
  e.kind = call.kind;
  e.device = current_device();
  e.stream = call.stream;
  e.address = call.address;
  e.size = call.size;
  e.aux = call.aux;
  if (call.rc != 0) {
    e.flags |= kFailed;
    e.aux = static_cast<uint64_t>(static_cast<uint32_t>(call.rc));
  }
  r->record(e, context_token(call.api, call.caller));
}

}  // namespace memreplay::interposer
