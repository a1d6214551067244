// Removes temporary output files when the process is interrupted. Every output file is written as
// a temporary beside its target and renamed onto it (base/output_file.h); its destructor removes
// the temporary on an error, but SIGINT (Ctrl-C), SIGTERM or SIGHUP end the process without
// running destructors. While a guard is alive, those signals first unlink its file, then take
// their previous action: the process still dies of the signal, and leaves nothing behind.
//
// SIGXFSZ (a write past the file size limit, `ulimit -f`) would kill the process the same way,
// without a word; it is caught and does nothing instead, so that the write fails with EFBIG
// ("File too large") and the writer reports it as any other write error, removing its temporary.
// A handler (not SIG_IGN) so that a program started by `memreplay record` gets the default back.
//
// A handler is installed for a signal only while its disposition is the default one, so a
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

// Installs the handlers now (the first TempFileGuard does it too): a caller that writes outside
// base/output_file.h, such as a scratch file, gets EFBIG rather than SIGXFSZ.
void install_temp_file_cleanup();

// Unlinks every guarded file now; async-signal-safe (for other fatal-signal handlers, such as
// the SIGBUS one of scratch_file.h).
void remove_guarded_files() noexcept;

}  // namespace memreplay
