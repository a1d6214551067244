#include "results/open_trace.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string_view>

#include "base/input_file.h"
#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/trace_stand_in.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "recorder/import/input/decompress.h"
#include "recorder/import/input/scratch_file.h"
#include "recorder/import/rmm/rmm_log_importer.h"
#include "replayer/retry_reading_sink.h"

namespace memreplay::results {
namespace {

// Enough of the file to tell its format: the magics, and an RMM log's header line.
constexpr size_t kSniffBytes = 4096;

std::string read_prefix(int fd) {
  std::string prefix(kSniffBytes, '\0');
  size_t have = 0;
  while (have < prefix.size()) {
    const ssize_t n = ::pread(fd, prefix.data() + have, prefix.size() - have, static_cast<off_t>(have));
    if (n <= 0) break;
    have += static_cast<size_t>(n);
  }
  prefix.resize(have);
  return prefix;
}

// Whether the first bytes are those of a file to import (false: a trace, or what is left of one);
// InputError for what no command reads. A compressed file is imported: its content says what it is.
bool needs_import(std::string_view prefix, const std::string& path) {
  if (format::kFileMagic.starts_with(prefix) || prefix.starts_with(format::kFileMagic)) return false;
  if (detect_compression(prefix, path) != Compression::none) return true;
  if (prefix.size() >= 2 && static_cast<uint8_t>(prefix[0]) == 0x80) return true;  // a pickle
  if (is_rmm_log_header(prefix.substr(0, prefix.find('\n')))) return true;
  throw InputError::at_byte(path, 0,
                            "not a memreplay trace (bad magic), nor a file `memreplay import` reads (a PyTorch "
                            "memory snapshot pickle, plain or .gz/.xz/.zst, or an RMM log)");
}

}  // namespace

struct OpenedTrace::Conversion {
  dev_t device;
  ino_t inode;
  ScratchFile file;
  ~Conversion() { unregister_trace_stand_in(device, inode); }
};

OpenedTrace::OpenedTrace(std::string path, std::unique_ptr<Conversion> conversion)
    : path_(std::move(path)), conversion_(std::move(conversion)) {}
OpenedTrace::OpenedTrace(OpenedTrace&&) noexcept = default;
OpenedTrace& OpenedTrace::operator=(OpenedTrace&&) noexcept = default;
OpenedTrace::~OpenedTrace() = default;

OpenedTrace open_trace(const std::string& path, std::optional<uint64_t> capacity) {
  struct stat st {};
  std::string prefix;
  {
    const int fd = open_input_file(path);
    ::fstat(fd, &st);
    prefix = read_prefix(fd);
    ::close(fd);
  }
  if (!needs_import(prefix, path)) return OpenedTrace(path, nullptr);

  auto conversion =
      std::unique_ptr<OpenedTrace::Conversion>(new OpenedTrace::Conversion{st.st_dev, st.st_ino, ScratchFile(path)});
  const std::string target = "/proc/self/fd/" + std::to_string(conversion->file.fd());
  try {
    TraceWriter writer(target, {.zstd_level = 1, .atomic = false, .background_encoding = true});
    if (capacity) {
      RetryReadingSink capped(writer, *capacity);
      import_file(path, capped);
    } else {
      import_file(path, writer);
    }
  } catch (const InputError& e) {
    // The input's errors name it; the conversion's own (a full temporary directory) would name
    // the descriptor: say what was being done instead.
    const std::string message = e.what();
    if (!message.starts_with(target + ":")) throw;
    throw InputError(path + ": cannot convert it to a trace in the temporary directory" +
                     message.substr(target.size()));
  }
  register_trace_stand_in(st.st_dev, st.st_ino, conversion->file.fd());
  return OpenedTrace(path, std::move(conversion));
}

}  // namespace memreplay::results
