// What plugin_guard.cpp and the exit interposers (plugin_exit_interposer.cpp) share: which plugin
// call is in flight on this thread, and the fault that ends the process.
#pragma once

#include <cstdint>
#include <string>

namespace memreplay::plugin_guard {

struct InFlight {
  const char* who = nullptr;  // non-null while a plugin call is in flight
  const char* call = nullptr;
  const std::string* trace = nullptr;  // the replay on this thread, if any
  const uint64_t* event = nullptr;
};
extern thread_local InFlight in_flight;

// The signal handlers and this thread's alternate signal stack, for a plugin call: for good from
// the first call of a plugin's policy, for this call only while a plugin loads (`while_loading`;
// true then when this call installed them: end_temporary_handlers() takes them out again).
bool prepare_thread(bool while_loading);
void end_temporary_handlers();
// Writes "memreplay: [TRACE: event N: ]WHO WHAT in its CALL" to stderr and exits with status 2.
[[noreturn]] void stop(const char* what);

}  // namespace memreplay::plugin_guard
