// One entry point for every recorded-run format memreplay reads. The format is told by the
// content (after undoing any compression, see decompress.h), never by the file name.
#pragma once

#include <string>
#include <string_view>

#include "proto/trace_sink.h"
#include "proto/trace_writer.h"

namespace memreplay {

enum class InputFormat {
  pytorch_snapshot,  // torch.cuda.memory._dump_snapshot() pickle (pytorch_snapshot_importer.h)
  rmm_log,  // RMM logging_resource_adaptor CSV (rmm_log_importer.h)
};

std::string_view input_format_name(InputFormat format);

// The format of decompressed `content`: a pickle of protocol 2 or newer (first byte 0x80, PROTO)
// is a PyTorch snapshot; text whose first line is an RMM log header is an RMM log. Anything else
// throws InputError naming `file`.
InputFormat detect_content_format(std::string_view content, const std::string& file);

// Reads and decompresses the file at `path`, then detect_content_format().
InputFormat detect_input_format(const std::string& path);

// Imports the file at `path` into `sink` with the importer its content calls for: sink.begin(),
// the events, sink.finish(). Throws InputError on unreadable, unknown or malformed input.
void import_file(const std::string& path, TraceSink& sink);
// The same for content already in memory (decompressed); `file` names it in errors.
void import_file_content(std::string_view content, const std::string& file, TraceSink& sink);

// The writer options of an import into a .mrt file (`memreplay import`, memreplay.load): the
// events encoded on a thread of their own and chunks compressed on a few more.
TraceWriterOptions import_writer_options();
// import_file into a new .mrt file at `output` (replaced whole, or left absent on an error) with
// import_writer_options(). Returns the number of events written.
uint64_t import_to_trace_file(const std::string& input, const std::string& output);

}  // namespace memreplay
