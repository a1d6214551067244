#include "recorder/live/process_hooks.h"

#include <pthread.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "recorder/live/thread_state.h"

namespace memreplay::detail {
namespace {

std::mutex g_mutex;
std::vector<ProcessHookClient*> g_clients;
pthread_key_t g_thread_exit_key;

void on_thread_exit(void*) {
  if (t_thread.key != 0) {
    std::lock_guard lock(g_mutex);
    for (ProcessHookClient* client : g_clients) client->thread_exited(t_thread.key);
  }
  for (RingCacheEntry& entry : t_thread.rings) entry = {};
}

// g_mutex is held across fork(), so the child finds the list whole.
void on_fork_prepare() { g_mutex.lock(); }
void on_fork_parent() { g_mutex.unlock(); }
void on_fork_child() {
  for (ProcessHookClient* client : g_clients) client->forked_child();
  g_mutex.unlock();
}

void ensure_hooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    pthread_key_create(&g_thread_exit_key, on_thread_exit);
    pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
  });
}

}  // namespace

void watch_process_events(ProcessHookClient* client) {
  ensure_hooks();
  std::lock_guard lock(g_mutex);
  g_clients.push_back(client);
}

void unwatch_process_events(ProcessHookClient* client) {
  std::lock_guard lock(g_mutex);
  std::erase(g_clients, client);
}

void notify_at_thread_exit() noexcept { pthread_setspecific(g_thread_exit_key, reinterpret_cast<void*>(1)); }

}  // namespace memreplay::detail
