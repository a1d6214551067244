// Reading behind a decompressor (recorder/import/growing_input.h): the unpickler and the snapshot
// importer must read a pickle that arrives piece by piece exactly as the whole pickle, wherever the
// pieces end, and a decoder's error must win over what the reader makes of a damaged stream.
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "proto/input_error.h"
#include "proto/trace_sink.h"
#include "recorder/import/import.h"
#include "recorder/import/input/decompress.h"
#include "recorder/import/input/growing_input.h"
#include "recorder/import/pytorch/pytorch_snapshot_importer.h"
#include "tests/support/test_support.h"

namespace memreplay {
namespace {

// Hands out exactly the bytes asked for, `step` at a time (1: every read stops at a piece's end),
// and counts the calls; past `fail_after` bytes it fails like a corrupt stream would.
class PiecewiseInput final : public GrowingInput {
 public:
  PiecewiseInput(std::string_view bytes, uint64_t step, uint64_t fail_after = UINT64_MAX)
      : bytes_(bytes), step_(step), fail_after_(fail_after) {}
  const char* data() const override { return bytes_.data(); }
  uint64_t wait_for(uint64_t bytes) const override {
    ++calls_;
    if (bytes > fail_after_) throw InputError("piecewise.xz: byte 7: corrupt xz data");
    const uint64_t rounded = bytes > UINT64_MAX - step_ ? UINT64_MAX : (bytes + step_ - 1) / step_ * step_;
    return std::min<uint64_t>(rounded, bytes_.size());
  }
  uint64_t calls() const { return calls_; }

 private:
  std::string_view bytes_;
  uint64_t step_;
  uint64_t fail_after_;
  mutable uint64_t calls_ = 0;
};

void expect_same_import(const CollectingSink& piecewise, const CollectingSink& whole) {
  ASSERT_TRUE(piecewise.finished);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(piecewise.header, whole.header));
  EXPECT_EQ(piecewise.stacks, whole.stacks);
  EXPECT_EQ(piecewise.annotations, whole.annotations);
  ASSERT_EQ(piecewise.events.size(), whole.events.size());
  EXPECT_TRUE(piecewise.events == whole.events);
}

TEST(GrowingInput, EveryRealSnapshotReadPieceByPieceImportsAsTheWhole) {
  (void)testing::real_data_path("traces");  // fails naming the folder when the data is missing
  const std::vector<std::string> names = testing::real_data_names("traces", ".pickle.xz");
  ASSERT_GE(names.size(), 9u);
  for (const std::string& name : names) {
    const std::string path = testing::real_data_path("traces/" + name + ".pickle.xz").string();
    const std::string bytes = read_decompressed(path);
    CollectingSink whole;
    import_pytorch_snapshot_pickle(bytes, path, whole);
    for (const uint64_t step : {uint64_t{1}, uint64_t{4093}}) {
      SCOPED_TRACE(name + " in pieces of " + std::to_string(step));
      const PiecewiseInput input(bytes, step);
      CollectingSink piecewise;
      import_pytorch_snapshot_pickle(std::string_view(bytes).substr(0, 0), path, piecewise, {}, &input);
      expect_same_import(piecewise, whole);
      // Protocol 4 frames are at most 64 KiB and each is waited for whole: a read per frame at least.
      EXPECT_GT(input.calls(), bytes.size() / 65536) << "the reader did not read behind the input";
    }
  }
}

TEST(GrowingInput, TheDecodersErrorIsTheOneReported) {
  const std::string path = testing::real_data_path("traces/gpt2_train.default.pickle.xz").string();
  const std::string bytes = read_decompressed(path);
  for (const uint64_t fail_after : {uint64_t{0}, uint64_t{100}, bytes.size() / 2, bytes.size()}) {
    const PiecewiseInput input(bytes, 65536, fail_after);
    CollectingSink sink;
    try {
      import_pytorch_snapshot_pickle({}, path, sink, {}, &input);
      ADD_FAILURE() << "imported although the stream fails after byte " << fail_after;
    } catch (const InputError& e) {
      EXPECT_STREQ(e.what(), "piecewise.xz: byte 7: corrupt xz data") << fail_after;
    }
    EXPECT_FALSE(sink.finished);
    EXPECT_TRUE(sink.events.empty()) << "events reached the sink before the input was whole";
  }
}

// The real decoder thread: a compressed snapshot imports to the very trace its decompressed copy
// does, and damage past the pickle's STOP (trailing garbage the decoder refuses) still fails it.
class GrowingInputFiles : public testing::TempDirTest {};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST_F(GrowingInputFiles, ACompressedFileImportsAsItsDecompressedCopy) {
  const std::string xz = testing::real_data_path("traces/gpt2_generate.default.pickle.xz").string();
  const std::string plain = path("gpt2_generate.pickle");
  write_file(plain, read_decompressed(xz));
  CollectingSink from_xz, from_plain;
  import_file(xz, from_xz);
  import_file(plain, from_plain);
  EXPECT_EQ(from_xz.header.source_file(), xz);
  from_xz.header.set_source_file(plain);  // the one field that names the file
  expect_same_import(from_xz, from_plain);

  const std::string damaged = path("trailing.pickle.xz");
  write_file(damaged, testing::read_bytes(xz) + "garbage!");
  CollectingSink sink;
  EXPECT_THROW(import_file(damaged, sink), InputError);
  EXPECT_FALSE(sink.finished);
}

}  // namespace
}  // namespace memreplay
