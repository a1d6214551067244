#include "recorder/import/trace_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "proto/input_error.h"

namespace memreplay {
namespace {

std::string file_path_for(const std::string& path, bool atomic) {
  return atomic ? path + ".tmp." + std::to_string(::getpid()) : path;
}

}  // namespace

TraceHeaderFields header_fields(const proto::TraceHeader& h) {
  TraceHeaderFields fields;
  fields.source = h.source();
  fields.source_file = h.source_file();
  fields.capture_time_ns = h.capture_time_ns();
  fields.command_line = h.command_line();
  fields.pid = h.pid();
  for (const proto::DeviceInfo& d : h.devices()) fields.devices.push_back({d.index(), d.name(), d.total_memory()});
  for (const auto& [key, value] : h.allocator_settings()) fields.allocator_settings.emplace(key, value);
  fields.producer = h.producer();
  fields.starts_mid_run = h.starts_mid_run();
  for (const proto::PoolInfo& p : h.pools())
    fields.pools.push_back({p.id(), p.kind(), p.torch_id_first(), p.torch_id_second(), p.name()});
  return fields;
}

TraceWriter::TraceWriter(std::string path, TraceWriterOptions options)
    : path_(std::move(path)),
      file_path_(file_path_for(path_, options.atomic)),
      atomic_(options.atomic),
      encoder_("TraceWriter", path_, file_path_, {options.events_per_chunk, options.zstd_level}) {}

TraceWriter::~TraceWriter() {
  if (in_place_) return;
  encoder_.abandon();
  if (atomic_) ::unlink(file_path_.c_str());
}

void TraceWriter::begin(const proto::TraceHeader& header) { encoder_.begin(header_fields(header)); }

void TraceWriter::finish() {
  if (in_place_) return;
  encoder_.finish();
  if (atomic_ && std::rename(file_path_.c_str(), path_.c_str()) != 0)
    throw InputError(path_ + ": cannot rename " + file_path_ + " onto it: " + std::strerror(errno));
  in_place_ = true;
}

}  // namespace memreplay
