// TraceReader on an arbitrary file: opening, reading every batch, the annotations, every stack
// and a seek by time either work or throw InputError.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"

namespace {

// Mutations nearly always break a record's CRC, which the reader checks first: so that the
// fuzzer gets past it into the payloads, every whole record gets its CRC recomputed, unless the
// input's last byte is 0xff (then the CRC checks themselves are what is fuzzed).
std::string with_valid_crcs(const uint8_t* data, size_t size) {
  std::string file(reinterpret_cast<const char*>(data), size);
  if (size == 0 || data[size - 1] == 0xff) return file;
  size_t at = memreplay::format::kFileMagic.size();
  while (at + memreplay::format::kRecordHeaderBytes <= size) {
    const auto* head = reinterpret_cast<const unsigned char*>(file.data() + at);
    const uint32_t length = memreplay::format::get_u32(head + 4);
    if (length > size - at - memreplay::format::kRecordHeaderBytes) break;
    const uint32_t crc = memreplay::format::payload_crc(
        std::string_view(file).substr(at + memreplay::format::kRecordHeaderBytes, length));
    for (int i = 0; i < 4; ++i) file[at + 8 + static_cast<size_t>(i)] = static_cast<char>(crc >> (8 * i));
    at += memreplay::format::kRecordHeaderBytes + length;
  }
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader takes a path: an in-memory file keeps the fuzzer off the disk.
  static const int fd = memfd_create("trace_reader_fuzz", 0);
  const std::string file = with_valid_crcs(data, size);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, file.data(), file.size(), 0) != static_cast<ssize_t>(file.size()))
    return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    memreplay::TraceReader reader(path);
    std::vector<memreplay::Event> batch;
    uint32_t max_stack = 0;
    uint64_t last_time = 0;
    while (reader.next_batch(batch)) {
      for (const memreplay::Event& e : batch) {
        if (e.kind == memreplay::EventKind::annotation) (void)reader.annotation(e);
        if (e.stack > max_stack) max_stack = e.stack;
        last_time = e.time_ns;
      }
    }
    (void)reader.truncation_note();
    for (uint32_t id = 1; id <= max_stack && id < 64; ++id) {
      try {
        (void)reader.stack_frames(id);
      } catch (const std::out_of_range&) {}
    }
    reader.seek_to_time(last_time);
    while (reader.next_batch(batch)) {}
  } catch (const memreplay::InputError&) {}
  return 0;
}
