// Process-wide hooks that let live recorders save what they hold when the process goes away:
//   exit()                    → flush_at_exit(): write everything and finish the file;
//   a fatal signal            → flush_on_signal(): write what can be written within ~2 s, then the
//                               signal goes on to the handler that was there before (or kills).
// Handlers are installed when the first client registers: atexit, and sigaction for SIGSEGV,
// SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT, SIGHUP and SIGQUIT unless the signal is
// ignored. A program that installs its own handler later replaces ours for that signal; the
// periodic flush still bounds what a crash loses. (Thread exit and fork() are process_hooks.h's.)
#pragma once

namespace memreplay::detail {

class ExitFlushClient {
 public:
  virtual ~ExitFlushClient() = default;
  virtual void flush_at_exit() noexcept = 0;
  // Called from a signal handler: only async-signal-tolerant work (set flags, sleep, poll).
  virtual void flush_on_signal() noexcept = 0;
};

// At most 64 clients at once; more are not flushed at exit (recording still works). A client
// unwatches itself once it has nothing left to save.
void watch_process_exit(ExitFlushClient* client) noexcept;
void unwatch_process_exit(ExitFlushClient* client) noexcept;

// What the atexit handler does: flush_at_exit() of every watched client.
void flush_watched_at_exit() noexcept;

}  // namespace memreplay::detail
