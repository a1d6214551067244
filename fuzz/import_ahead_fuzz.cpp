// The snapshot importer's two output paths on arbitrary pickle bytes, differentially: the chunks
// encoded while the pickle is read (recorder/import/chunks_ahead.h) and the events emitted after
// it (TraceWriterOptions::encoded_chunks = false), each through a real TraceWriter with chunks of
// a few events, so the rows are cut, compressed ahead and joined many times per input. Whatever
// the input, both must refuse it with the same line or write the same bytes; any difference is a
// bug (trapped), as are a crash, a sanitizer report or a leak.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "proto/input_error.h"
#include "proto/trace_writer.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"

namespace {

// One scratch file per path, per process (parallel jobs do not share them), in memory if /dev/shm is.
std::string scratch(const char* name) {
  const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/import_ahead_fuzz." + std::to_string(getpid()) + "." + name;
}

struct Outcome {
  std::string error;  // the refusal's line, or empty
  std::string bytes;  // the file, when accepted
};

Outcome import_to(std::string_view pickle, const std::string& path, bool ahead) {
  Outcome outcome;
  try {
    memreplay::TraceWriter writer(
        path,
        {.events_per_chunk = 7, .zstd_level = 1, .atomic = false, .compression_threads = 2, .encoded_chunks = ahead});
    // Where the rows are ruled out (writer.wrote_encoded() false), the serial path wrote the file.
    memreplay::import_pytorch_snapshot_pickle(pickle, "fuzz", writer);
  } catch (const memreplay::InputError& e) {
    outcome.error = e.what();
    return outcome;
  }
  std::ifstream in(path, std::ios::binary);
  outcome.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string ahead_path = scratch("ahead.mrt"), events_path = scratch("events.mrt");
  static const int removed_at_exit = std::atexit([] {
    std::remove(ahead_path.c_str());
    std::remove(events_path.c_str());
  });
  (void)removed_at_exit;
  const std::string_view pickle(reinterpret_cast<const char*>(data), size);
  const Outcome ahead = import_to(pickle, ahead_path, true);
  const Outcome events = import_to(pickle, events_path, false);
  if (ahead.error != events.error || ahead.bytes != events.bytes) {
    std::fprintf(stderr, "import_ahead_fuzz: the two output paths differ: [%s] vs [%s], %zu vs %zu bytes\n",
                 ahead.error.c_str(), events.error.c_str(), ahead.bytes.size(), events.bytes.size());
    std::abort();
  }
  return 0;
}
