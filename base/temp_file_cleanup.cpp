#include "base/temp_file_cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

namespace memreplay {
namespace {

// Slots the signal handler reads: a fixed buffer each, so the handler touches no heap. `state`
// is free -> claimed (being written) -> armed (the handler may unlink the path) -> free.
enum SlotState : int { kFree, kClaimed, kArmed };
struct Slot {
  std::atomic<int> state{kFree};
  char path[4096];
};
std::array<Slot, TempFileGuard::kMaxGuards> slots;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};  // fatal: remove, then die of the signal
struct sigaction previous[std::size(kSignals)];
std::once_flag installed;

void on_signal(int signal) {
  remove_guarded_files();
  // Die of the signal as the process would have without us (its exit status says so).
  for (size_t i = 0; i < std::size(kSignals); ++i)
    if (kSignals[i] == signal) ::sigaction(signal, &previous[i], nullptr);
  ::raise(signal);
}

// SIGXFSZ does nothing: the write that went past the limit fails with EFBIG instead.
void on_file_size_limit(int) {}

void install() {
  struct sigaction current {};
  if (::sigaction(SIGXFSZ, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction ours {};
    ours.sa_handler = on_file_size_limit;
    sigemptyset(&ours.sa_mask);
    ::sigaction(SIGXFSZ, &ours, nullptr);
  }
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction current {};
    if (::sigaction(kSignals[i], nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction ours {};
    ours.sa_handler = on_signal;
    sigemptyset(&ours.sa_mask);
    for (int s : kSignals) sigaddset(&ours.sa_mask, s);  // one clean-up at a time
    ::sigaction(kSignals[i], &ours, &previous[i]);
  }
}

}  // namespace

void install_temp_file_cleanup() { std::call_once(installed, install); }

void remove_guarded_files() noexcept {
  for (Slot& slot : slots)
    if (slot.state.load(std::memory_order_acquire) == kArmed) ::unlink(slot.path);
}

TempFileGuard::TempFileGuard(const std::string& path) {
  install_temp_file_cleanup();
  if (path.size() >= sizeof slots[0].path) return;
  for (size_t i = 0; i < slots.size(); ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel)) continue;
    std::memcpy(slots[i].path, path.c_str(), path.size() + 1);
    slots[i].state.store(kArmed, std::memory_order_release);
    slot_ = static_cast<int>(i);
    return;
  }
}

void TempFileGuard::release() {
  if (slot_ < 0) return;
  slots[static_cast<size_t>(slot_)].state.store(kFree, std::memory_order_release);
  slot_ = -1;
}

}  // namespace memreplay
