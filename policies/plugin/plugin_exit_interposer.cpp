// exit(), _exit(), _Exit(), quick_exit() and __cxa_atexit() of the whole process, defined here so
// that a plugin's calls to them reach these first (this library comes before the C library in the
// lookup order; plugin_guard.h says why). Outside a plugin call each forwards to the C library's
// own at once. Its own translation unit: nothing here may register an exit handler itself.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "policies/plugin/plugin_guard_state.h"

namespace {

using memreplay::plugin_guard::in_flight;

using ExitFunction = void (*)(int);
using RegisterFunction = int (*)(void (*)(void*), void*, void*);

// The C library's definitions, looked up once while the process loads us (before main): _exit()
// is async-signal-safe and exit() runs in forked children of threaded programs, so neither may
// call dlsym, which is neither (it takes the loader's lock and allocates its error state).
struct NextDefinitions {
  ExitFunction exit, exit_now, exit_immediately, quick_exit;
  RegisterFunction cxa_atexit;
};

NextDefinitions look_up_next_definitions() {
  const auto next = [](const char* name) { return dlsym(RTLD_NEXT, name); };
  return {reinterpret_cast<ExitFunction>(next("exit")), reinterpret_cast<ExitFunction>(next("_exit")),
          reinterpret_cast<ExitFunction>(next("_Exit")), reinterpret_cast<ExitFunction>(next("quick_exit")),
          reinterpret_cast<RegisterFunction>(next("__cxa_atexit"))};
}

NextDefinitions g_next{};

// Before any other constructor of this library's users (101: the first priority not reserved).
__attribute__((constructor(101))) void resolve_next_definitions() { g_next = look_up_next_definitions(); }

// A call that comes before the constructor ran (a library initialised earlier registers a
// destructor) looks the definitions up itself; only the constructor writes them.
NextDefinitions next_definitions() { return g_next.cxa_atexit != nullptr ? g_next : look_up_next_definitions(); }

// "called exit(3)", without allocating.
[[noreturn]] void stop_at_exit(const char* function, int status) {
  char what[64] = "called ";
  std::strncat(what, function, 20);
  std::strcat(what, "(");
  char digits[16];
  size_t n = 0;
  auto value = static_cast<uint64_t>(status < 0 ? -static_cast<int64_t>(status) : status);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  size_t at = std::strlen(what);
  if (status < 0) what[at++] = '-';
  while (n > 0) what[at++] = digits[--n];
  what[at++] = ')';
  what[at] = '\0';
  memreplay::plugin_guard::stop(what);
}

// An exit handler a plugin registered during a call: a plugin call of its own when it runs.
struct PluginExitHandler {
  void (*function)(void*);
  void* argument;
  char who[200];
};

void run_plugin_exit_handler(void* opaque) {
  auto* handler = static_cast<PluginExitHandler*>(opaque);
  const memreplay::plugin_guard::InFlight saved = in_flight;
  in_flight = {handler->who, "exit handler", nullptr, nullptr};
  handler->function(handler->argument);
  in_flight = saved;
  std::free(handler);
}

}  // namespace

extern "C" {

void exit(int status) noexcept {
  if (in_flight.who != nullptr) stop_at_exit("exit", status);
  next_definitions().exit(status);
  __builtin_unreachable();
}

void _exit(int status) {
  if (in_flight.who != nullptr) stop_at_exit("_exit", status);
  next_definitions().exit_now(status);
  __builtin_unreachable();
}

void _Exit(int status) noexcept {
  if (in_flight.who != nullptr) stop_at_exit("_Exit", status);
  next_definitions().exit_immediately(status);
  __builtin_unreachable();
}

void quick_exit(int status) noexcept {
  if (in_flight.who != nullptr) stop_at_exit("quick_exit", status);
  next_definitions().quick_exit(status);
  __builtin_unreachable();
}

int __cxa_atexit(void (*function)(void*), void* argument, void* dso) noexcept {
  const RegisterFunction next = next_definitions().cxa_atexit;
  if (in_flight.who == nullptr) return next(function, argument, dso);
  // malloc, not new: no C++ runtime on this path, which the runtime itself may be initialising.
  auto* handler = static_cast<PluginExitHandler*>(std::malloc(sizeof(PluginExitHandler)));
  if (handler == nullptr) return -1;
  handler->function = function;
  handler->argument = argument;
  std::strncpy(handler->who, in_flight.who, sizeof handler->who - 1);
  handler->who[sizeof handler->who - 1] = '\0';
  return next(&run_plugin_exit_handler, handler, dso);
}

}  // extern "C"
