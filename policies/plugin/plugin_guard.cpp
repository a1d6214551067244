// The fatal-signal handler and the one-line fault of a plugin call in flight (plugin_guard.h).
// Everything on the fault path is async-signal-safe: a fixed buffer, write(2), exit_group.
#include "policies/plugin/plugin_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

#include "policies/plugin/plugin_guard_state.h"

namespace memreplay::plugin_guard {

thread_local InFlight in_flight;

namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
struct sigaction previous_actions[NSIG];

const char* signal_name(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV: a bad memory access or a stack overflow";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE: an arithmetic fault";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT: abort()";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return "a fatal signal";
  }
}

// A line built without allocating.
class Line {
 public:
  Line& operator<<(const char* text) {
    for (; text != nullptr && *text != '\0' && size_ < sizeof text_; ++text) text_[size_++] = *text;
    return *this;
  }
  Line& operator<<(uint64_t number) {
    char digits[24];
    size_t n = 0;
    do {
      digits[n++] = static_cast<char>('0' + number % 10);
      number /= 10;
    } while (number != 0);
    while (n > 0 && size_ < sizeof text_) text_[size_++] = digits[--n];
    return *this;
  }
  void write_to_stderr() {
    size_t done = 0;
    while (done < size_) {
      const ssize_t n = ::write(STDERR_FILENO, text_ + done, size_ - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

 private:
  char text_[1024];
  size_t size_ = 0;
};

// "memreplay: TRACE: event N: plugin policy 'NAME' ", the start of a fault's line.
Line fault_line() {
  Line line;
  line << "memreplay: ";
  if (in_flight.trace != nullptr && in_flight.event != nullptr)
    line << in_flight.trace->c_str() << ": event " << *in_flight.event << ": ";
  line << in_flight.who << " ";
  return line;
}

void on_fatal_signal(int signal, siginfo_t* info, void*) {
  if (in_flight.who != nullptr) {
    Line line = fault_line();
    line << "crashed in its " << in_flight.call << " (" << signal_name(signal) << ")\n";
    line.write_to_stderr();
    ::syscall(SYS_exit_group, 2);
  }
  // Not a plugin's: whatever handled it before does (a synchronous fault repeats on return; a
  // signal sent by someone is sent again).
  sigaction(signal, &previous_actions[signal], nullptr);
  if (info == nullptr || info->si_code <= 0) raise(signal);
}

void install_handlers() {
  struct sigaction action {};
  action.sa_sigaction = on_fatal_signal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (const int signal : kFatalSignals) sigaction(signal, &action, &previous_actions[signal]);
}

// This thread's alternate signal stack, so that a plugin's stack overflow still reaches the handler;
// given back when the thread ends. A thread that has one already (a sanitizer's) keeps it.
class AlternateStack {
 public:
  static constexpr size_t kBytes = 64 * 1024;
  AlternateStack() {
    stack_t current{};
    if (sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) return;
    void* memory = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return;
    stack_t stack{};
    stack.ss_sp = memory;
    stack.ss_size = kBytes;
    if (sigaltstack(&stack, nullptr) != 0) {
      munmap(memory, kBytes);
      return;
    }
    memory_ = memory;
  }
  ~AlternateStack() {
    if (memory_ == nullptr) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
    munmap(memory_, kBytes);
  }
  AlternateStack(const AlternateStack&) = delete;
  AlternateStack& operator=(const AlternateStack&) = delete;

 private:
  void* memory_ = nullptr;
};

// The handlers are in place for good from the first call of a plugin's policy, and before that
// only while a plugin loads (at start-up, before an import maps its input: the handlers there
// stay whatever the import's own code puts in, its one line for a file that shrinks).
std::atomic<bool> handlers_kept{false};
std::mutex handlers_mutex;
bool handlers_installed = false;  // under handlers_mutex

bool take_handlers(bool while_loading) {
  if (handlers_kept.load(std::memory_order_acquire)) [[likely]]
    return false;
  const std::lock_guard lock(handlers_mutex);
  const bool installed_here = !handlers_installed;
  if (installed_here) install_handlers();
  handlers_installed = true;
  if (!while_loading) handlers_kept.store(true, std::memory_order_release);
  return installed_here && while_loading;
}

void give_back_handlers() {
  const std::lock_guard lock(handlers_mutex);
  if (handlers_kept.load(std::memory_order_acquire) || !handlers_installed) return;
  for (const int signal : kFatalSignals) sigaction(signal, &previous_actions[signal], nullptr);
  handlers_installed = false;
}

}  // namespace

bool prepare_thread(bool while_loading) {
  const bool temporary = take_handlers(while_loading);
  thread_local AlternateStack stack;
  return temporary;
}

void end_temporary_handlers() { give_back_handlers(); }

void stop(const char* what) {
  Line line = fault_line();
  line << what << " in its " << in_flight.call << "\n";
  line.write_to_stderr();
  ::syscall(SYS_exit_group, 2);
  __builtin_unreachable();
}

}  // namespace memreplay::plugin_guard

namespace memreplay {

using plugin_guard::in_flight;

PluginEventScope::PluginEventScope(const std::string& trace, const uint64_t& event_index)
    : previous_trace_(in_flight.trace), previous_event_(in_flight.event) {
  in_flight.trace = &trace;
  in_flight.event = &event_index;
}

PluginEventScope::~PluginEventScope() {
  in_flight.trace = previous_trace_;
  in_flight.event = previous_event_;
}

PluginCallScope::PluginCallScope(const char* who, const char* call, bool while_loading)
    : previous_who_(in_flight.who),
      previous_call_(in_flight.call),
      temporary_handlers_(plugin_guard::prepare_thread(while_loading)) {
  in_flight.who = who;
  in_flight.call = call;
}

PluginCallScope::~PluginCallScope() {
  in_flight.who = previous_who_;
  in_flight.call = previous_call_;
  if (temporary_handlers_) plugin_guard::end_temporary_handlers();
}

}  // namespace memreplay
