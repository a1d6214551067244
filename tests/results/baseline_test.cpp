// The baseline file: what check writes, check reads back the same (odd names, extreme numbers
// included); the committed version-1 baseline still reads; the lock makes a second updater wait,
// and a signal removes the lock file of the update it ends, never the one of the update it waits for.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>

#include "proto/input_error.h"
#include "results/baseline.h"
#include "results/baseline_lock.h"
#include "results/check_run.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

using results::Baseline;
using results::BaselineEntry;

std::string refusal(std::string_view text) {
  return testing::error_of<InputError>([&] { results::parse_baseline(text, "b.json"); });
}

TEST(Baseline, WhatIsWrittenReadsBackTheSame) {
  Baseline b;
  b.capacity = std::numeric_limits<uint64_t>::max();
  b.tolerances = {{"reserved_peak", 0.02}, {"unallocated_at_peak", 0}, {"events", 1e300}};
  b.entries.push_back({"gpt2 \"nightly\" \\ ü 训练",
                       "pytorch:expandable_segments:True,max_split_size_mb:64",
                       {{"reserved_peak", 1.7976931348623157e308},
                        {"requested_peak", 4.9e-324},
                        {"overhead", 1.0000000000000002},
                        {"oom", 1},
                        {"events", 0}}});
  b.entries.push_back({std::string(4000, 'x'), "p", {}});
  const Baseline back = results::parse_baseline(results::baseline_text(b), "b.json");
  EXPECT_EQ(back.capacity, b.capacity);
  EXPECT_EQ(back.tolerances, b.tolerances);
  ASSERT_EQ(back.entries.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.entries[i].trace, b.entries[i].trace);
    EXPECT_EQ(back.entries[i].policy, b.entries[i].policy);
    EXPECT_EQ(back.entries[i].values, b.entries[i].values);
  }
  EXPECT_EQ(results::baseline_text(back), results::baseline_text(b));
}

// A version-1 baseline, as check wrote them before entries held the job's size.
TEST(Baseline, AVersionOneBaselineStillReads) {
  const Baseline b = results::parse_baseline(R"({"capacity": null, "entries": [{"metrics": {"device_calls": 15.0,
      "free_fragmentation_at_peak": 0.7281476073538196, "oom": 0.0, "overhead": 1.4595823568505368,
      "reserved_peak": 683671552.0, "unallocated_at_peak": 0.36107649539877296}, "policy": "pytorch",
      "trace": "run"}], "schema": "memreplay-check-baseline", "schema_version": 1, "tolerances": {}})",
                                             "v1.json");
  ASSERT_EQ(b.entries.size(), 1u);
  EXPECT_EQ(b.entries[0].values.at("reserved_peak"), 683671552.0);
  EXPECT_FALSE(b.entries[0].values.count("requested_peak"));  // no shrink guard in version 1
}

TEST(Baseline, RefusalsNameTheFieldOrTheByte) {
  const std::string head = R"({"schema":"memreplay-check-baseline","schema_version":2,)";
  EXPECT_EQ(refusal(head + R"("entries":[]})"), "");
  EXPECT_EQ(refusal(head + R"("entries":[{"trace":"t","policy":"p","metrics":{"reserved":1}}]})"),
            "b.json: entries[0].metrics: unknown metric 'reserved' (metrics: requested_peak, reserved_peak, "
            "overhead, unallocated_at_peak, free_fragmentation_at_peak, device_calls, events, oom, min_fit_bytes)");
  EXPECT_EQ(refusal(head + R"("entries":[{"trace":"","policy":"p","metrics":{}}]})"),
            "b.json: entries[0].trace: the name '' is empty");
  EXPECT_EQ(refusal(head + R"("entries":{}})"), "b.json: entries: expected an array of entries");
  EXPECT_EQ(refusal(head + R"("capacity":0,"entries":[]})"), "b.json: capacity: expected null or bytes (> 0)");
  EXPECT_EQ(refusal(head + R"("tolerances":[],"entries":[]})"), "b.json: tolerances: expected an object");
  EXPECT_EQ(refusal(head + R"("entries":[]} x)").rfind("b.json: byte 70: not JSON", 0), 0u);
  EXPECT_EQ(refusal(std::string(9, '{')), "b.json: byte 8: nested deeper than 8 levels");
  EXPECT_EQ(refusal("[1, -2e999]"), "b.json: byte 4: the number -2e999 does not fit a double");
  EXPECT_EQ(refusal("\"[[[[[[[[[[[\\\"[[[\""),
            "b.json: not a memreplay check baseline (no \"schema\": "
            "\"memreplay-check-baseline\")");  // brackets in a string
}

TEST(Baseline, TolerancesFromTheCommandLineAreFiniteAndNonNegative) {
  EXPECT_EQ(results::parse_tolerance("reserved_peak=2%"), std::make_pair(std::string("reserved_peak"), 0.02));
  EXPECT_EQ(results::parse_tolerance("overhead=0.05").second, 0.05);
  for (const char* bad : {"reserved_peak=nan", "reserved_peak=inf", "reserved_peak=-1", "reserved_peak=1e999",
                          "reserved_peak=0x10", "reserved_peak=", "reserved_peak=5%%", "reserved_peak"})
    EXPECT_NE(testing::error_of<InputError>([&] { results::parse_tolerance(bad); }), "") << bad;
}

TEST(BaselineLock, ASecondUpdaterWaitsForTheFirst) {
  const auto dir = std::filesystem::temp_directory_path() / ("memreplay_lock_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string baseline = (dir / "b.json").string();
  std::atomic<bool> second_holds{false};
  std::thread second;
  {
    results::BaselineLock first(baseline);
    second = std::thread([&] {
      results::BaselineLock lock(baseline);  // its own open file: flock excludes it
      second_holds = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_FALSE(second_holds.load());
  }
  second.join();
  EXPECT_TRUE(second_holds.load());
  EXPECT_FALSE(std::filesystem::exists(baseline + ".lock"));
  std::filesystem::remove_all(dir);
}

// A child process that, once a byte comes on `go` (if not -1), takes the lock on `baseline`, says
// so through `ready`, and waits to be ended by a signal. Forked before the parent locks anything:
// a forked child inherits the parent's guarded paths.
pid_t updater_killed_by_signal(const std::string& baseline, int go, int ready) {
  const pid_t child = ::fork();
  if (child == 0) {
    char byte;
    if (go >= 0 && ::read(go, &byte, 1) != 1) std::_Exit(3);
    results::BaselineLock lock(baseline);
    const char held = 1;
    if (::write(ready, &held, 1) != 1) std::_Exit(3);
    for (;;) ::pause();
  }
  return child;
}

TEST(BaselineLock, ASignalToTheHolderRemovesTheLockFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("memreplay_lock_sig_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string baseline = (dir / "b.json").string();
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t child = updater_killed_by_signal(baseline, -1, ready[1]);
    char held = 0;
    ASSERT_EQ(::read(ready[0], &held, 1), 1);
    EXPECT_TRUE(std::filesystem::exists(baseline + ".lock"));
    ::kill(child, signal);
    int status = 0;
    ::waitpid(child, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal) << strsignal(signal);
    EXPECT_FALSE(std::filesystem::exists(baseline + ".lock")) << strsignal(signal);
    ::close(ready[0]);
    ::close(ready[1]);
  }
  std::filesystem::remove_all(dir);
}

TEST(BaselineLock, ASignalToAWaiterLeavesTheHoldersLockFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("memreplay_lock_wait_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string baseline = (dir / "b.json").string();
  int go[2], ready[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t waiter = updater_killed_by_signal(baseline, go[0], ready[1]);
  {
    results::BaselineLock holder(baseline);
    ASSERT_EQ(::write(go[1], "g", 1), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // it waits in flock by now
    ::kill(waiter, SIGTERM);
    int status = 0;
    ::waitpid(waiter, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    EXPECT_TRUE(std::filesystem::exists(baseline + ".lock")) << "the holder's file was removed under it";
  }
  for (int fd : {go[0], go[1], ready[0], ready[1]}) ::close(fd);
  EXPECT_FALSE(std::filesystem::exists(baseline + ".lock"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memreplay
