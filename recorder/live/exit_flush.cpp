#include "recorder/live/exit_flush.h"

#include <signal.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>

namespace memreplay::detail {
namespace {

// Slots rather than a locked list: a signal handler must be able to walk them.
constexpr size_t kMaxClients = 64;
std::array<std::atomic<ExitFlushClient*>, kMaxClients> g_clients{};

constexpr std::array kFatalSignals = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT};
// The disposition each signal had before ours, to hand the signal on to.
std::array<struct sigaction, NSIG> g_previous{};

template <typename F>
void for_each_client(F&& f) noexcept {
  for (auto& slot : g_clients)
    if (ExitFlushClient* c = slot.load(std::memory_order_acquire)) f(c);
}

void on_exit() { flush_watched_at_exit(); }

bool is_fault(int sig) { return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE; }

void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  for_each_client([](ExitFlushClient* c) { c->flush_on_signal(); });
  const struct sigaction& previous = g_previous[static_cast<size_t>(sig)];
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler == SIG_IGN) {
    // The program ignores it: so do we.
  } else if (previous.sa_handler == SIG_DFL) {
    // Die as the signal would have killed us. A fault re-executes the faulting instruction on
    // return (so the core shows the real fault); anything else is raised again, delivered once
    // this handler returns.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
    if (!(is_fault(sig) && info != nullptr && info->si_code > 0)) raise(sig);
  } else {
    previous.sa_handler(sig);
  }
  errno = saved_errno;
}

void install_handlers() {
  std::atexit(on_exit);
  for (int sig : kFatalSignals) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_IGN) continue;
    struct sigaction ours {};
    ours.sa_sigaction = on_fatal_signal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    g_previous[static_cast<size_t>(sig)] = current;
    sigaction(sig, &ours, nullptr);
  }
}

}  // namespace

void watch_process_exit(ExitFlushClient* client) noexcept {
  static std::once_flag once;
  try {
    std::call_once(once, install_handlers);
  } catch (...) {
    return;
  }
  for (auto& slot : g_clients) {
    ExitFlushClient* expected = nullptr;
    if (slot.compare_exchange_strong(expected, client, std::memory_order_acq_rel)) return;
  }
}

void unwatch_process_exit(ExitFlushClient* client) noexcept {
  for (auto& slot : g_clients) {
    ExitFlushClient* expected = client;
    if (slot.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel)) return;
  }
}

void flush_watched_at_exit() noexcept {
  for_each_client([](ExitFlushClient* c) { c->flush_at_exit(); });
}

}  // namespace memreplay::detail
