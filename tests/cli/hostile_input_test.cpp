// Hostile and damaged inputs: each class of failure found, reproduced with a
// small fixture built here, and the rule that holds for all of them: one line on stderr naming
// the file and a byte offset or event index, exit status 2, no leftover output, and — for inputs
// of at most 1 MB — at most 1 GiB of memory and 10 s (the CLI runs under `ulimit -v` and
// `timeout`). A trace cut off mid-write replays, but says so.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/output_file.h"
#include "policies/registry.h"
#include "proto/chunk_decoder.h"
#include "proto/framing.h"
#include "proto/input_error.h"
#include "proto/trace_reader.h"
#include "proto/trace_writer.h"
#include "recorder/import/import.h"
#include "recorder/import/input/decompress.h"
#include "replayer/device_registry.h"
#include "replayer/replay_runner.h"
#include "tests/support/bounded_run.h"
#include "tests/support/cli_run.h"
#include "tests/support/sanitizer.h"
#include "tests/support/test_support.h"

#if MEMREPLAY_TEST_UNDER_ASAN
// AddressSanitizer takes SIGBUS for its own report by default; the import's handler (one line,
// exit 2) is what AnInputThatShrinksWhileMapped... checks: the sanitizer build leaves SIGBUS to it.
extern "C" const char* __asan_default_options() { return "handle_sigbus=0"; }
#endif

namespace memreplay {
namespace {

namespace fs = std::filesystem;

size_t line_count(const std::string& text) {
  size_t lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// --- a few pickle opcodes, enough to build hostile snapshots by hand ---

struct PickleBuilder {
  std::string bytes = "\x80\x04";  // PROTO 4
  PickleBuilder& op(char c) { return bytes += c, *this; }
  PickleBuilder& str(const std::string& s) {
    if (s.size() < 256) {
      bytes += '\x8c';  // SHORT_BINUNICODE
      bytes += static_cast<char>(s.size());
    } else {
      bytes += 'X';  // BINUNICODE
      for (int i = 0; i < 4; ++i) bytes += static_cast<char>((s.size() >> (8 * i)) & 0xff);
    }
    return bytes += s, *this;
  }
  PickleBuilder& small_int(uint8_t v) { return bytes += 'K', bytes += static_cast<char>(v), *this; }
  PickleBuilder& int32(uint32_t v) {
    bytes += 'J';
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>((v >> (8 * i)) & 0xff);
    return *this;
  }
  PickleBuilder& put(uint8_t slot) { return bytes += 'q', bytes += static_cast<char>(slot), *this; }  // BINPUT
  PickleBuilder& get(uint8_t slot) { return bytes += 'h', bytes += static_cast<char>(slot), *this; }  // BINGET
  // '}' EMPTY_DICT, ']' EMPTY_LIST, '(' MARK, 'u' SETITEMS, 'e' APPENDS, '.' STOP
};

// A snapshot whose external_annotations are one annotation referenced `refs` times; that
// annotation's value is a list of 1,000 references to one 4 KiB string.
std::string annotation_amplifier(int refs) {
  PickleBuilder p;
  p.op('}').op('(').str("segments").op(']').str("device_traces").op(']').op(']').op('a');  // [[]]
  p.str("external_annotations").op(']').op('(');
  p.op('}').op('(').str("device").small_int(0).str("time_us").small_int(0).str("payload");
  p.op(']').op('(').str(std::string(4096, 'x')).put(1);
  for (int i = 1; i < 1000; ++i) p.get(1);
  p.op('e').op('u').put(0);
  for (int i = 1; i < refs; ++i) p.get(0);
  p.op('e').op('u').op('.');
  return p.bytes;
}

// A snapshot with one trace entry of `keys` keys, referenced `refs` times in its trace.
std::string entry_amplifier(int keys, int refs) {
  PickleBuilder p;
  p.op('}').op('(').str("segments").op(']').str("device_traces").op(']').op(']').op('(');
  p.op('}').op('(').str("action").str("segment_alloc").str("addr").int32(1 << 20).str("size").int32(1 << 21);
  p.str("stream").small_int(0);
  for (int k = 0; k < keys; ++k) p.str("k" + std::to_string(k)).small_int(0);
  p.op('u').put(0);
  for (int i = 1; i < refs; ++i) p.get(0);
  p.op('e').op('a').op('u').op('.');  // APPENDS into the trace, APPEND it to device_traces
  return p.bytes;
}

// A zstd frame that declares `declared` bytes of content and holds one empty raw block.
std::string zstd_declaring(uint64_t declared) {
  std::string f = "\x28\xb5\x2f\xfd";
  f += '\xe0';  // frame header: 8-byte content size, single segment (no window descriptor)
  for (int i = 0; i < 8; ++i) f += static_cast<char>((declared >> (8 * i)) & 0xff);
  f += std::string("\x01\x00\x00", 3);  // last block, raw, 0 bytes
  return f;
}

// A zstd frame of run-length blocks: `prefix`, then `blocks` × 128 KiB of `fill`: 4 bytes per
// 128 KiB, so 1 MB of it holds 32 GiB.
std::string zstd_rle_bomb(const std::string& prefix, char fill, size_t blocks) {
  std::string f = "\x28\xb5\x2f\xfd";
  f += '\x00';  // no content size
  f += '\x38';  // window 128 KiB
  const uint32_t raw = static_cast<uint32_t>(prefix.size()) << 3;
  f += static_cast<char>(raw & 0xff), f += static_cast<char>((raw >> 8) & 0xff), f += static_cast<char>(raw >> 16);
  f += prefix;
  for (size_t i = 0; i < blocks; ++i) {
    const uint32_t rle = (131072u << 3) | 2u | (i + 1 == blocks ? 1u : 0u);
    f += static_cast<char>(rle & 0xff), f += static_cast<char>((rle >> 8) & 0xff), f += static_cast<char>(rle >> 16);
    f += fill;
  }
  return f;
}

class HostileInput : public testing::TempDirTest {
 protected:
  // `memreplay import` of `bytes`: exit 2, one line naming the file, no output file left behind.
  std::string expect_import_refused(const std::string& bytes) {
    const std::string in = path("in.bin"), out = path("out.mrt");
    write_file(in, bytes);
    EXPECT_LE(bytes.size(), 1u << 20);
    const testing::CliRun run = testing::run_memreplay_bounded("import " + in + " -o " + out, dir_.string());
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_EQ(line_count(run.err), 1u) << run.err;
    EXPECT_EQ(run.err.rfind("memreplay: " + in + ": byte ", 0), 0u) << run.err;
    for (const auto& entry : fs::directory_iterator(dir_))
      EXPECT_EQ(entry.path().filename().string().find("out.mrt"), std::string::npos) << entry.path();
    return run.err;
  }

  // A real trace (the bundled multistream snapshot, imported), cut to `keep` of its bytes.
  std::string cut_trace(double keep) {
    const std::string whole = path("whole.mrt"), cut = path("cut.mrt");
    TraceWriter writer(whole, {.events_per_chunk = 256});
    import_file((testing::source_dir() / "traces" / "multistream_pipeline.default.pickle.xz").string(), writer);
    const std::string bytes = testing::read_bytes(whole);
    write_file(cut, bytes.substr(0, static_cast<size_t>(static_cast<double>(bytes.size()) * keep)));
    return cut;
  }
};

// --- decompression bombs ---

TEST_F(HostileInput, ZstdFrameDeclaringThreeGigabytesIsRefusedWithoutAllocatingThem) {
  const std::string bomb = zstd_declaring(3'000'000'000ull);
  EXPECT_EQ(bomb.size(), 16u);
  const std::string error = expect_import_refused(bomb);
  EXPECT_NE(error.find("zstd"), std::string::npos) << error;
}

TEST_F(HostileInput, RunLengthZstdBombStopsAtTheCeilingNotAt16GiB) {
  // 1 MB that expands to 32 GiB of NONE opcodes after "PROTO 4, EMPTY_LIST, MARK".
  const std::string bomb = zstd_rle_bomb(std::string("\x80\x04](", 4), 'N', (1u << 20) / 4 - 8);
  const std::string error = expect_import_refused(bomb);
  EXPECT_NE(error.find("exceeds"), std::string::npos) << error;
}

TEST(Decompress, CeilingScalesWithTheInputAndHoldsForEveryFormat) {
  const std::string bomb = zstd_rle_bomb("", '\0', 2048);  // 256 MiB of zeros from 8 KB
  const std::string error =
      testing::error_of<InputError>([&] { decompress(bomb, "bomb.zst", decompression_ceiling(bomb.size())); });
  EXPECT_NE(error.find("bomb.zst: byte "), std::string::npos) << error;
  EXPECT_NE(error.find("exceeds"), std::string::npos) << error;
  EXPECT_EQ(decompression_ceiling(1), kMinDecompressionCeiling);
  EXPECT_EQ(decompression_ceiling(uint64_t{1} << 30), uint64_t{128} << 30);
  EXPECT_EQ(decompression_ceiling(kDefaultMaxDecompressedBytes / kMaxCompressionRatio), kDefaultMaxDecompressedBytes);
  EXPECT_EQ(decompression_ceiling(kDefaultMaxDecompressedBytes), kDefaultMaxDecompressedBytes);
}

// --- amplification through memoized references ---

TEST_F(HostileInput, AnnotationReferencedManyTimesIsRefusedNotExpanded) {
  const std::string pickle = annotation_amplifier(200'000);
  EXPECT_LT(pickle.size(), 500'000u);
  const std::string error = expect_import_refused(pickle);
  EXPECT_NE(error.find("refers to the same objects over and over"), std::string::npos) << error;
}

TEST_F(HostileInput, TraceEntryWithManyKeysReferencedManyTimesIsRefused) {
  const std::string pickle = entry_amplifier(20'000, 100'000);
  EXPECT_LT(pickle.size(), 1u << 20);
  const std::string error = expect_import_refused(pickle);
  EXPECT_NE(error.find("refers to the same objects over and over"), std::string::npos) << error;
}

// Compressed, the pickle is read behind its decoder and the work budget grows with the bytes
// decoded so far (snapshot_reader.cpp, charge()): it still ends at the whole input's budget.
TEST_F(HostileInput, AmplifiersAreRefusedWhenCompressedToo) {
  for (const std::string& pickle : {annotation_amplifier(200'000), entry_amplifier(20'000, 100'000)}) {
    std::string zst(ZSTD_compressBound(pickle.size()), '\0');
    zst.resize(ZSTD_compress(zst.data(), zst.size(), pickle.data(), pickle.size(), 1));
    const std::string error = expect_import_refused(zst);
    EXPECT_NE(error.find("refers to the same objects over and over"), std::string::npos) << error;
  }
}

TEST(HostileSnapshot, AFewAliasesStillImport) {
  // The same entry 10 times (10 segment_allocs of one address would be odd, but it is data):
  // the budget leaves room for real sharing.
  CollectingSink sink;
  const std::string pickle = entry_amplifier(3, 10);
  EXPECT_NO_THROW(import_file_content(pickle, "ten.pickle", sink));
  EXPECT_EQ(sink.events.size(), 10u);
}

// --- errors with an offset ---

TEST_F(HostileInput, NotASnapshotAndUnknownFormatNameAByteOffset) {
  PickleBuilder p;
  p.str("hello").op('.');
  const std::string not_snapshot = expect_import_refused(p.bytes);
  EXPECT_NE(not_snapshot.find(": byte 2: not a memory snapshot: the pickle holds a str"), std::string::npos)
      << not_snapshot;
  const std::string unknown = expect_import_refused("neither a pickle nor a log\n");
  EXPECT_NE(unknown.find(": byte 0: unknown input format"), std::string::npos) << unknown;
}

// --- trace files ---

// Replaces the payload of the trace's first chunk record with `payload` (CRC fixed up).
std::string with_first_chunk(const std::string& trace, const std::string& payload) {
  size_t at = format::kFileMagic.size();
  const auto* head = reinterpret_cast<const unsigned char*>(trace.data() + at);
  at += format::kRecordHeaderBytes + format::get_u32(head + 4);  // skip the header record
  head = reinterpret_cast<const unsigned char*>(trace.data() + at);
  const uint32_t old_length = format::get_u32(head + 4);
  std::string rebuilt = trace.substr(0, at) + format::encode_record(format::RecordType::chunk, payload);
  rebuilt += trace.substr(at + format::kRecordHeaderBytes + old_length);
  return rebuilt;
}

TEST_F(HostileInput, ChunkExpandingAThousandfoldIsRefusedAtItsOffset) {
  TraceWriter writer(path("small.mrt"), {.atomic = false});
  writer.begin(proto::TraceHeader());
  writer.append(Event{.kind = EventKind::alloc, .address = 4096, .size = 512});
  writer.flush();  // no footer: the reader walks the records
  const std::string zeros(64u << 20, '\0');
  std::string payload(ZSTD_compressBound(zeros.size()), '\0');
  payload.resize(ZSTD_compress(payload.data(), payload.size(), zeros.data(), zeros.size(), 1));
  const std::string hostile = path("hostile.mrt");
  write_file(hostile, with_first_chunk(testing::read_bytes(path("small.mrt")), payload));
  const std::string error = testing::error_of<InputError>([&] { TraceReader::read_all(hostile); });
  EXPECT_NE(error.find(hostile + ": byte "), std::string::npos) << error;
  EXPECT_NE(error.find("claims to decompress to 67108864 bytes"), std::string::npos) << error;
  EXPECT_LE(fs::file_size(hostile), 1u << 20);
  for (const std::string command : {"info ", "validate ", "replay --policy pytorch "}) {
    const testing::CliRun run = testing::run_memreplay_bounded(command + hostile, dir_.string());
    EXPECT_EQ(run.status, 2) << command << run.err;
    EXPECT_EQ(line_count(run.err), 1u) << command << run.err;
    EXPECT_NE(run.err.find(hostile + ": byte "), std::string::npos) << command << run.err;
  }
}

TEST(ChunkCeiling, MoreEventsThanAWriterMayPutInAChunkIsAnError) {
  // Field 3 (kind), packed: kMaxEventsPerChunk + 1 alloc kinds.
  const size_t n = kMaxEventsPerChunk + 1;
  std::string chunk = "\x80\x01\x01\x1a";  // first_stack_id (field 16) = 1, then the kind column
  for (size_t v = n; v >= 0x80; v >>= 7) chunk += static_cast<char>((v & 0x7f) | 0x80);
  chunk += static_cast<char>(n >> 21);
  chunk += std::string(n, static_cast<char>(EventKind::alloc));
  ChunkDecoder decoder;
  proto::Chunk parsed;
  std::vector<Event> events;
  const auto error = decoder.decode(chunk, parsed, events);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("more than the 2097152"), std::string::npos) << *error;
}

TEST_F(HostileInput, HeaderWithInvalidUtf8GivesOurLineOnly) {
  // A real trace whose header's source ("pytorch-snapshot") starts with a byte that is not
  // UTF-8, its CRC made right again: only the UTF-8 check can refuse it.
  std::string bytes = testing::read_bytes(cut_trace(1.0));
  const size_t at = bytes.find("pytorch-snapshot");
  ASSERT_NE(at, std::string::npos);
  bytes[at] = '\xff';
  const size_t header_at = format::kFileMagic.size();
  const uint32_t length = format::get_u32(reinterpret_cast<const unsigned char*>(bytes.data() + header_at + 4));
  const std::string payload = bytes.substr(header_at + format::kRecordHeaderBytes, length);
  bytes.replace(header_at, format::kRecordHeaderBytes + length,
                format::encode_record(format::RecordType::header, payload));
  const std::string trace = path("utf8.mrt");
  write_file(trace, bytes);
  const testing::CliRun run = testing::run_memreplay_bounded("info " + trace, dir_.string());
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_EQ(line_count(run.err), 1u) << run.err;  // not libprotobuf's log line first
  EXPECT_NE(run.err.find(trace + ": byte 8: header record does not parse"), std::string::npos) << run.err;
}

// --- an input that shrinks while it is mapped ---

TEST_F(HostileInput, AnInputThatShrinksWhileMappedEndsWithOneLineAndStatus2) {
  const std::string input = path("shrinking.pickle");
  write_file(input, std::string(1u << 20, 'x'));
  const std::string err = path("err.txt");
  const pid_t pid = fork();
  if (pid == 0) {
    std::freopen(err.c_str(), "w", stderr);
    const InputBytes bytes(input);
    truncate(input.c_str(), 0);
    volatile char last = bytes.view()[(1u << 20) - 1];  // past the new end: SIGBUS
    (void)last;
    _exit(0);
  }
  int raw = 0;
  ASSERT_EQ(waitpid(pid, &raw, 0), pid);
  ASSERT_TRUE(WIFEXITED(raw)) << "died of signal " << WTERMSIG(raw);
  EXPECT_EQ(WEXITSTATUS(raw), 2);
  const std::string message = testing::read_bytes(err);
  EXPECT_EQ(line_count(message), 1u) << message;
  EXPECT_NE(message.find(input + ": the file shrank while it was being read"), std::string::npos) << message;
}

// --- events per file byte ---

// 300 chunks each within its ceilings, but 19.7 M events in a few hundred KB: without a budget
// of events per byte, `replay` and `validate` ran past 10 s and `info` hit bad_alloc under 1 GiB.
std::string many_events_in_few_bytes(const std::string& path, bool finished) {
  TraceWriter writer(path, {.events_per_chunk = 65536, .zstd_level = 1, .atomic = false});
  writer.begin(proto::TraceHeader());
  const EventKind kinds[] = {EventKind::alloc, EventKind::free_requested, EventKind::free_completed};
  // A little entropy (a new size every 64 events), so that each chunk stays under the reader's
  // expansion ceiling as the crafted file's did (1.7 KB a chunk).
  for (uint32_t i = 0; i < 300 * 65536; ++i)
    writer.append(Event{.kind = kinds[i % 3], .address = 4096, .size = 512u * (1 + ((i / 64) * 2654435761u >> 28))});
  if (finished)
    writer.finish();
  else
    writer.flush();  // no footer: the budget is met chunk by chunk
  return path;
}

TEST_F(HostileInput, MoreEventsThanTheFileSizeCanHoldAreRefusedQuickly) {
  for (const bool finished : {true, false}) {
    const std::string hostile = many_events_in_few_bytes(path(finished ? "whole.mrt" : "open.mrt"), finished);
    const uint64_t bytes = fs::file_size(hostile);
    ASSERT_LT(bytes, 1u << 20);
    ASSERT_GT(300 * 65536u, TraceReader::event_budget(bytes));
    const std::string error = testing::error_of<InputError>([&] { TraceReader::read_all(hostile); });
    EXPECT_NE(error.find(hostile + ": byte "), std::string::npos) << error;
    EXPECT_NE(error.find("a file of that size may hold"), std::string::npos) << error;
    for (const std::string command : {"info ", "validate ", "replay --policy pytorch "}) {
      const testing::CliRun run = testing::run_memreplay_bounded(command + hostile, dir_.string());
      EXPECT_EQ(run.status, 2) << command << run.err;
      EXPECT_EQ(line_count(run.err), 1u) << command << run.err;
      EXPECT_NE(run.err.find("a file of that size may hold"), std::string::npos) << command << run.err;
    }
  }
}

// The budget is far above what real traces need: each shared trace, imported, holds less than
// half of kMaxEventsPerByte events per byte of its file.
TEST(EventBudget, RealTracesHoldFarFewerEventsPerByte) {
  const std::vector<std::string> names = testing::real_data_names("traces", ".pickle.xz");
  ASSERT_GE(names.size(), 9u) << "shared traces missing under " << testing::real_data_dir();
  for (const std::string& name : names) {
    const std::string trace = testing::imported_trace(name);
    TraceReader reader(trace);
    ASSERT_NE(reader.footer(), nullptr) << trace;
    const double per_byte =
        static_cast<double>(reader.footer()->total_events()) / static_cast<double>(fs::file_size(trace));
    EXPECT_LT(per_byte * 2, TraceReader::kMaxEventsPerByte) << name << ": " << per_byte << " events per byte";
  }
}

// --- sizes near 2^64 ---

TEST(PolicyBase, RequestsNear2To64AreOomsInEveryPolicy) {
  for (const PolicyInfo& info : PolicyRegistry::instance().policies()) {
    auto device = DeviceRegistry::instance().create("sim", DeviceRequest{});
    auto policy = PolicyRegistry::instance().create(info.name, *device);
    for (uint64_t bytes : {std::numeric_limits<uint64_t>::max(), std::numeric_limits<uint64_t>::max() - 511,
                           Policy::kMaxRequestBytes + 1})
      EXPECT_EQ(policy->allocate(bytes, 0), std::nullopt) << info.name << " " << bytes;
    EXPECT_EQ(policy->stats().ooms, 3u) << info.name;
    EXPECT_EQ(device->counters().malloc_calls, 0u) << info.name;
    EXPECT_THROW(policy->adopt_block(0, std::numeric_limits<uint64_t>::max(), 1, 0), PolicyContractError);
  }
}

// --- incomplete traces: numbers, but never silently ---

TEST_F(HostileInput, ReplayOfACutTraceIsMarkedIncompleteWithWhatWasLost) {
  const std::string cut = cut_trace(0.5);
  ReplayOptions options;
  options.trace_path = cut;
  options.policy_spec = "pytorch";
  const ReplayMetrics m = run_replay(options);
  EXPECT_FALSE(m.trace_complete);
  EXPECT_FALSE(m.complete());
  ASSERT_TRUE(m.loss.has_value());
  EXPECT_GT(m.loss->whole_events, 0u);
  EXPECT_LT(m.loss->whole_events, 1647u);  // the trace's entries (and its preexisting events)
  EXPECT_GT(m.loss->lost_bytes, 0u);
  EXPECT_EQ(m.loss->file_bytes, fs::file_size(cut));
  const auto warning = incomplete_warning(cut, m);
  ASSERT_TRUE(warning.has_value());
  EXPECT_NE(warning->find("the last whole event is event " + std::to_string(m.loss->whole_events - 1)),
            std::string::npos)
      << *warning;
  EXPECT_EQ(line_count(*warning), 0u);
}

TEST_F(HostileInput, ReplayCompareAndFitWarnOnceAndSayCompleteFalse) {
  const std::string cut = cut_trace(0.5);
  const std::string dir = dir_.string();
  for (const std::string command : {"replay " + cut + " --policy pytorch --json -",
                                    "compare " + cut + " --policy pytorch --policy passthrough --json -",
                                    "fit " + cut + " --policy pytorch --json -",
                                    "fit " + cut + " --policy pytorch --capacity 100GiB --json -"}) {  // fits: exit 0
    const testing::CliRun run = testing::run_memreplay_bounded(command, dir);
    ASSERT_EQ(run.status, 0) << command << "\n" << run.err;
    EXPECT_EQ(line_count(run.err), 1u) << command << "\n" << run.err;
    EXPECT_EQ(run.err.rfind("memreplay: warning: " + cut + " is incomplete", 0), 0u) << run.err;
    EXPECT_NE(run.err.find("the last whole event is event"), std::string::npos) << run.err;
    const auto json = nlohmann::json::parse(run.out);
    const auto& metrics = json.contains("results") ? json["results"][0] : json;
    EXPECT_EQ(metrics["complete"], false) << command;
  }
  const testing::CliRun table = testing::run_memreplay_bounded("replay " + cut + " --policy pytorch", dir);
  EXPECT_NE(table.out.find(" NO\n"), std::string::npos) << table.out;
}

TEST_F(HostileInput, ACompleteTraceSaysCompleteAndWarnsNothing) {
  const std::string whole = cut_trace(1.0);
  const testing::CliRun run =
      testing::run_memreplay_bounded("replay " + whole + " --policy pytorch --json -", dir_.string());
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_EQ(nlohmann::json::parse(run.out)["complete"], true);
}

// --- interrupted writers leave nothing ---

// The temporary a writer of `target` in `dir` is writing (base/output_file.h), or "".
std::string writer_temporary(const fs::path& dir, const std::string& target) {
  for (const auto& entry : fs::directory_iterator(dir))
    if (temporary_owner(entry.path().filename().string(), target) == getpid()) return entry.path().string();
  return "";
}

TEST_F(HostileInput, SigintOrSigtermDuringAnImportLeavesNoTemporaryFile) {
  for (int signal : {SIGINT, SIGTERM}) {
    const std::string out = path("interrupted.mrt");
    EXPECT_EXIT(
        {
          TraceWriter writer(out);
          writer.begin(proto::TraceHeader());
          for (uint64_t i = 0; i < 100'000; ++i)
            writer.append(Event{.kind = EventKind::alloc, .address = i * 512, .size = 512});
          if (writer_temporary(dir_, "interrupted.mrt").empty()) std::_Exit(3);
          raise(signal);
        },
        ::testing::KilledBySignal(signal), "");
    for (const auto& entry : fs::directory_iterator(dir_))
      EXPECT_EQ(entry.path().filename().string().find("interrupted.mrt"), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace memreplay
