// Containing the faults of a policy plugin that no C++ check can catch. While a call into a plugin
// is in flight on a thread (PluginCallScope), a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT,
// SIGTRAP, SIGSYS; a stack overflow too: the handler runs on an alternate stack) or an exit()
// (_exit, _Exit, quick_exit) ends memreplay at once with one line on stderr and exit status 2:
//
//   memreplay: TRACE: event N: plugin policy 'NAME' crashed in its allocate call (SIGSEGV)
//   memreplay: TRACE: event N: plugin policy 'NAME' called exit(0) in its free call
//
// never with a verdict: a plugin cannot end a `check` as a pass. An exit handler a plugin registers
// during a call (atexit, a C++ static's destructor) counts as a plugin call when it runs. Outside
// plugin calls, signals go to whatever handler was there before and exit() is the C library's.
// The trace and event come from the replay that runs on the thread (PluginEventScope); without
// one (loading, creating the policy), the line names the plugin and the call only.
#pragma once

#include <cstdint>
#include <string>

namespace memreplay {

// The replay on this thread: its trace, and the index of the event it is at (read, not copied).
class PluginEventScope {
 public:
  PluginEventScope(const std::string& trace, const uint64_t& event_index);
  ~PluginEventScope();
  PluginEventScope(const PluginEventScope&) = delete;
  PluginEventScope& operator=(const PluginEventScope&) = delete;

 private:
  const std::string* previous_trace_;
  const uint64_t* previous_event_;
};

// A call into a plugin, in flight while this lives. `who` ("plugin policy 'NAME'", "plugin PATH")
// and `call` ("allocate") must outlive it. The signal handlers are installed for good at the
// first call of a plugin's policy; a call `while_loading` the plugin (dlopen, its table) has them
// only while it lasts, so that loading plugins at start-up leaves the process's other handlers
// (an import's own for a file that shrinks) as they would be.
class PluginCallScope {
 public:
  PluginCallScope(const char* who, const char* call, bool while_loading = false);
  ~PluginCallScope();
  PluginCallScope(const PluginCallScope&) = delete;
  PluginCallScope& operator=(const PluginCallScope&) = delete;

 private:
  const char* previous_who_;
  const char* previous_call_;
  bool temporary_handlers_;
};

}  // namespace memreplay
