// Removes temporary output files when the process is interrupted. TraceWriter writes PATH.tmp.PID
// and renames it in finish(); its destructor removes the file on an error, but SIGINT (Ctrl-C) or
// SIGTERM ends the process without running destructors. While a guard is alive, those signals
// (and SIGHUP) first unlink its file, then take their previous action: the process still dies of
// the signal, and leaves nothing behind.
//
// The handler is installed for a signal only while its disposition is the default one, so a
// program with its own handler keeps it (and its own clean-up duty). At most kMaxGuards files at
// once; a guard beyond that protects nothing (and says so through active()).
#pragma once

#include <cstddef>
#include <string>

namespace memreplay {

class TempFileGuard {
 public:
  static constexpr size_t kMaxGuards = 16;

  explicit TempFileGuard(const std::string& path);
  ~TempFileGuard() { release(); }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

  // The file is in place (renamed) or removed already: stop guarding it.
  void release();
  bool active() const { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

// Unlinks every guarded file now; async-signal-safe (for other fatal-signal handlers, such as
// the SIGBUS one of scratch_file.h).
void remove_guarded_files() noexcept;

}  // namespace memreplay
