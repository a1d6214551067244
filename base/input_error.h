// The one error type for bad input anywhere (trace files, snapshots, logs, policy options).
// what() is one line that names the file and where in it: "FILE: byte 1234: ..." or
// "FILE: event 56: ...". The CLI prints it and exits with status 2.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace memreplay {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;

  static InputError at_byte(const std::string& file, uint64_t offset, const std::string& what) {
    return InputError(file + ": byte " + std::to_string(offset) + ": " + what);
  }
  static InputError at_event(const std::string& file, uint64_t index, const std::string& what) {
    return InputError(file + ": event " + std::to_string(index) + ": " + what);
  }
};

}  // namespace memreplay
