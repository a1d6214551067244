#include "recorder/import/import.h"

#include "proto/input_error.h"
#include "recorder/import/input/decompress.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "recorder/import/rmm/rmm_log_importer.h"

namespace memreplay {

std::string_view input_format_name(InputFormat format) {
  switch (format) {
    case InputFormat::pytorch_snapshot: return "pytorch-snapshot";
    case InputFormat::rmm_log: return "rmm-log";
  }
  return "unknown";
}

namespace {
// An RMM log's header line is under 100 bytes; a line this long is not one.
constexpr size_t kMaxHeaderLineBytes = 64 << 10;

// Protocols 2-5 open with PROTO (0x80) and the version; every snapshot PyTorch writes does.
bool opens_a_pickle(std::string_view content) {
  return content.size() >= 2 && static_cast<uint8_t>(content[0]) == 0x80 && content[1] >= 2 && content[1] <= 5;
}
}  // namespace

InputFormat detect_content_format(std::string_view content, const std::string& file) {
  if (opens_a_pickle(content)) return InputFormat::pytorch_snapshot;
  // The header line is looked for in the first bytes only: a large file without a newline (a
  // sparse 1 GB one) is not read whole to find out it is none of ours.
  const std::string_view head = content.substr(0, kMaxHeaderLineBytes);
  if (is_rmm_log_header(head.substr(0, head.find('\n')))) return InputFormat::rmm_log;
  if (content.empty()) throw InputError::at_byte(file, 0, "the file is empty");
  throw InputError::at_byte(file, 0,
                            "unknown input format: neither a PyTorch memory snapshot (pickle, "
                            "protocol 2 or newer) nor an RMM log (CSV with a "
                            "'Thread,Time,Action,Pointer,Size,Stream' header)");
}

InputFormat detect_input_format(const std::string& path) {
  return detect_content_format(read_decompressed(path), path);
}

void import_file(const std::string& path, TraceSink& sink) {
  const InputBytes content(path);
  if (opens_a_pickle(content.prefix(2))) {
    // Read front to back, behind the decoder: the pages behind the reader go back to the kernel.
    import_pytorch_snapshot_input(content, path, sink);
    return;
  }
  import_file_content(content.view(), path, sink);
}

TraceWriterOptions import_writer_options() {
  // Enough to keep up with the encoding thread at zstd level 3 (a chunk's compression takes about
  // as long as encoding it); the threads exist only while a chunk is being compressed.
  constexpr uint32_t kCompressionThreads = 3;
  // A snapshot's chunks are encoded and compressed while it is read where the output stage adds
  // nothing to its entries (pytorch/chunks_ahead.h); otherwise encoding overlaps the output
  // stage, and the chunks' zstd the encoding.
  return {.background_encoding = true, .compression_threads = kCompressionThreads};
}

uint64_t import_to_trace_file(const std::string& input, const std::string& output) {
  TraceWriter writer(output, import_writer_options());
  import_file(input, writer);
  return writer.events_appended();
}

void import_file_content(std::string_view content, const std::string& file, TraceSink& sink) {
  switch (detect_content_format(content, file)) {
    case InputFormat::pytorch_snapshot: import_pytorch_snapshot_pickle(content, file, sink); return;
    case InputFormat::rmm_log: import_rmm_log_text(content, file, sink); return;
  }
}

}  // namespace memreplay
