// The live recorders of this process, told of two process events that concern every one of them:
//   a thread exits      → thread_exited(key): its ring can be freed once the writer has emptied it;
//   fork() (the child)  → forked_child(): the writer thread and the file belong to the parent, so
//                         the child's copy of the recorder must stop recording.
// Exit and fatal signals are exit_flush.h's business.
#pragma once

#include <cstdint>

namespace memreplay::detail {

class ProcessHookClient {
 public:
  virtual ~ProcessHookClient() = default;
  // Called on the exiting thread, under the list's lock (also for a client made useless by fork()).
  virtual void thread_exited(uint64_t thread_key) = 0;
  // Called in the child, on the thread that forked, with every other thread gone.
  virtual void forked_child() noexcept = 0;
};

// Installs the fork handlers on first use.
void watch_process_events(ProcessHookClient* client);
void unwatch_process_events(ProcessHookClient* client);
// From the calling thread's first record() on: at its exit, every client hears of it and the
// thread's ring cache (thread_state.h) is emptied, so a later record() there (from another exit
// handler) registers afresh.
void notify_at_thread_exit() noexcept;

}  // namespace memreplay::detail
