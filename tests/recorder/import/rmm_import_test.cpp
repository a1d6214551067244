// The RMM logging_resource_adaptor CSV importer: the documented format, its variants, and
// one-line errors naming the bad line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_sink.h"
#include "recorder/import/import.h"
#include "recorder/import/rmm/rmm_log_importer.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

// As logging_resource_adaptor writes it: header, then "%t,%H:%M:%S.%f,<action>,%p,%zu,<stream>".
const std::string kLog =
    "Thread,Time,Action,Pointer,Size,Stream\n"
    "140234,10:49:47.163838,allocate,0x7f3c8e000000,1024,0x0\n"
    "140234,10:49:47.163901,allocate,0x7f3c8e000400,2048,0x5612e3c0\n"
    "140235,10:49:47.164002,allocate failure,(nil),1099511627776,0x5612e3c0\n"
    "140234,10:49:47.164100,free,0x7f3c8e000000,1024,0x0\n";

constexpr uint64_t ns_of(uint64_t h, uint64_t m, uint64_t s, uint64_t us) {
  return ((h * 60 + m) * 60 + s) * 1'000'000'000 + us * 1000;
}

CollectingSink import_text(const std::string& csv) {
  CollectingSink sink;
  import_rmm_log_text(csv, "log.csv", sink);
  return sink;
}

std::string import_error(const std::string& csv) {
  return testing::error_of<InputError>([&] { import_text(csv); });
}

TEST(RmmImport, EveryActionOfTheDocumentedFormat) {
  const CollectingSink sink = import_text(kLog);
  ASSERT_EQ(sink.events.size(), 5u);
  const auto& e = sink.events;
  EXPECT_EQ(e[0].kind, EventKind::alloc);
  EXPECT_EQ(e[0].address, 0x7f3c8e000000u);
  EXPECT_EQ(e[0].size, 1024u);
  EXPECT_EQ(e[0].stream, 0u);
  EXPECT_EQ(e[0].time_ns, ns_of(10, 49, 47, 163838));
  EXPECT_EQ(e[0].device, 0u);
  EXPECT_EQ(e[1].stream, 0x5612e3c0u);
  EXPECT_EQ(e[1].address, 0x7f3c8e000400u);
  // allocate failure: an oom flagged failed, with the size asked for and no address.
  EXPECT_EQ(e[2].kind, EventKind::oom);
  EXPECT_TRUE(e[2].has_flag(kFailed));
  EXPECT_EQ(e[2].size, uint64_t{1} << 40);
  EXPECT_EQ(e[2].address, 0u);
  EXPECT_EQ(e[2].aux, 0u);
  // free: requested and completed at once.
  EXPECT_EQ(e[3].kind, EventKind::free_requested);
  EXPECT_EQ(e[4].kind, EventKind::free_completed);
  EXPECT_EQ(e[4].address, 0x7f3c8e000000u);
  EXPECT_EQ(e[4].time_ns, ns_of(10, 49, 47, 164100));
  EXPECT_EQ(sink.header.source(), "rmm-log");
  EXPECT_EQ(sink.header.source_file(), "log.csv");
  ASSERT_EQ(sink.header.devices_size(), 1);
  EXPECT_EQ(sink.header.devices(0).index(), 0u);
  EXPECT_FALSE(sink.header.starts_mid_run());
  EXPECT_TRUE(sink.finished);
}

TEST(RmmImport, FormatVariants) {
  // Columns by name in any order, Thread/Time/Stream optional, CRLF, a BOM, blank lines,
  // null pointers and decimal streams of older RMM versions.
  const CollectingSink sink = import_text(
      "\xef\xbb\xbf"
      "Size,Action,Pointer\r\n"
      "64,allocate,7f00\r\n"
      "\r\n"
      "64,free,0x7F00\r\n");
  ASSERT_EQ(sink.events.size(), 3u);
  EXPECT_EQ(sink.events[0].address, 0x7f00u);
  EXPECT_EQ(sink.events[0].time_ns, 0u);
  EXPECT_EQ(sink.events[2].address, 0x7f00u);

  const CollectingSink streams = import_text(
      "Thread,Time,Action,Pointer,Size,Stream\n"
      "1,12.5,allocate,0x10,8,0\n"
      "1,13,allocate,0x20,8,(nil)\n"
      "1,14,allocate,0x30,8,42\n"
      "1,15,allocate,0x40,8,7fab\n");
  ASSERT_EQ(streams.events.size(), 4u);
  EXPECT_EQ(streams.events[0].time_ns, 12'500'000'000u);  // a plain number is seconds
  EXPECT_EQ(streams.events[1].stream, 0u);
  EXPECT_EQ(streams.events[2].stream, 42u);
  EXPECT_EQ(streams.events[3].stream, 0x7fabu);
}

TEST(RmmImport, TimesKeepRisingPastMidnight) {
  const CollectingSink sink = import_text(
      "Thread,Time,Action,Pointer,Size,Stream\n"
      "1,23:59:59.900000,allocate,0x10,8,0x0\n"
      "1,00:00:00.100000,free,0x10,8,0x0\n");
  ASSERT_EQ(sink.events.size(), 3u);
  EXPECT_EQ(sink.events[1].time_ns - sink.events[0].time_ns, 200'000'000u);
}

TEST(RmmImport, BadRowsNameTheLineAndByteOffset) {
  const std::string header = "Thread,Time,Action,Pointer,Size,Stream\n";
  const std::string good = "1,10:00:00.000001,allocate,0x10,8,0x0\n";
  EXPECT_EQ(import_error(header + good + "1,10:00:00.000002,allocate,zz,8,0x0\n"),
            "log.csv: line 3, byte 104: bad pointer 'zz'");
  EXPECT_EQ(import_error(header + "1,10:00:00.000002,allocate,0x10,-8,0x0\n"),
            "log.csv: line 2, byte 71: bad size '-8'");
  EXPECT_EQ(import_error(header + good + good + "1,10:00:00.000002,resize,0x10,8,0x0\n"),
            "log.csv: line 4, byte 133: unknown action 'resize' (expected allocate, free or allocate failure)");
  EXPECT_EQ(import_error(header + "1,10:00:00.000002,allocate,0x10,8\n"),
            "log.csv: line 2, byte 39: expected 6 comma-separated fields, found 5");
  EXPECT_EQ(import_error(header + "1,25:00:00.0,allocate,0x10,8,0x0\n"),
            "log.csv: line 2, byte 41: bad time '25:00:00.0' (expected HH:MM:SS.ffffff or seconds)");
  EXPECT_EQ(import_error(header + "1,10:00:00.0,allocate,0x10,8,0xzz\n"),
            "log.csv: line 2, byte 68: bad stream '0xzz'");
  EXPECT_EQ(import_error(""),
            "log.csv: line 1, byte 0: empty file: expected an RMM log header "
            "'Thread,Time,Action,Pointer,Size,Stream'");
  EXPECT_NE(import_error("Thread,Time,Pointer\n").find("line 1, byte 0: not an RMM log header"), std::string::npos);
}

TEST(RmmImport, DetectedByContent) {
  const std::string path = (std::filesystem::temp_directory_path() / "memreplay_rmm_test.pickle").string();
  std::ofstream(path, std::ios::binary) << kLog;
  EXPECT_EQ(detect_input_format(path), InputFormat::rmm_log);
  CollectingSink sink;
  import_file(path, sink);
  EXPECT_EQ(sink.events.size(), 5u);
  EXPECT_EQ(sink.header.source(), "rmm-log");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace memreplay
