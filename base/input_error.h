// The one error type for bad input anywhere (trace files, snapshots, logs, policy options).
// what() is one line that names the file and where in it: "FILE: byte 1234: ..." or
// "FILE: event 56: ...". The CLI prints it and exits with status 2; the Python API raises it as
// memreplay.InputError with the file, byte offset and event index apart.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace memreplay {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;

  static InputError at_byte(const std::string& file, uint64_t offset, const std::string& what) {
    InputError e(file + ": byte " + std::to_string(offset) + ": " + what);
    e.file_ = file;
    e.byte_offset_ = offset;
    return e;
  }
  static InputError at_event(const std::string& file, uint64_t index, const std::string& what) {
    InputError e(file + ": event " + std::to_string(index) + ": " + what);
    e.file_ = file;
    e.event_index_ = index;
    return e;
  }

  // Where the error is, as at_byte and at_event were told it (empty / nullopt otherwise).
  const std::string& file() const { return file_; }
  std::optional<uint64_t> byte_offset() const { return byte_offset_; }
  std::optional<uint64_t> event_index() const { return event_index_; }

 private:
  std::string file_;
  std::optional<uint64_t> byte_offset_;
  std::optional<uint64_t> event_index_;
};

}  // namespace memreplay
