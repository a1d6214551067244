// The one way to open what a user names as a trace: a .mrt file, or any recorded run that
// `memreplay import` reads (a PyTorch snapshot pickle, plain or .gz/.xz/.zst, an RMM log), told
// by the content, never by the name. A .mrt is read as it is; anything else is imported first
// into an unlinked trace file in $TMPDIR (else /tmp): on disk, so memory stays what an import
// needs, and gone with the process whatever ends it. While the OpenedTrace lives, every
// TraceReader of the original path reads the conversion (proto/trace_stand_in.h), so replay,
// check, report and the rest take the path as it is.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace memreplay::results {

class OpenedTrace {
 public:
  OpenedTrace(OpenedTrace&&) noexcept;
  OpenedTrace& operator=(OpenedTrace&&) noexcept;
  ~OpenedTrace();  // the conversion, if any, is forgotten and its file closed

  // The path to give TraceReader, ReplayOptions::trace_path and the rest: the one opened.
  const std::string& path() const { return path_; }
  // Whether it was imported (false: a .mrt, read as it is).
  bool converted() const { return conversion_ != nullptr; }

 private:
  friend OpenedTrace open_trace(const std::string& path, std::optional<uint64_t> capacity);
  struct Conversion;
  OpenedTrace(std::string path, std::unique_ptr<Conversion> conversion);

  std::string path_;
  std::unique_ptr<Conversion> conversion_;
};

// Throws InputError naming the path: it cannot be read, is not a regular file, or is neither a
// trace nor an input memreplay imports (or the import fails: its own error, with its offset).
// `capacity`: the per-process cap the recorded run had, as --capacity gives it; an import then
// settles what the snapshot leaves open between release-and-retry and empty_cache() under it
// (replayer/retry_reading_sink.h). A .mrt is read as it is.
OpenedTrace open_trace(const std::string& path, std::optional<uint64_t> capacity = std::nullopt);

}  // namespace memreplay::results
