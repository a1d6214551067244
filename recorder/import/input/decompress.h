// Reads an input file whole and undoes its compression, chosen by the first bytes of the content
// (never by the file name: users rename files, and `.pickle` snapshots are often xz'd in place).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "recorder/import/input/growing_input.h"
#include "recorder/import/input/scratch_file.h"

namespace memreplay {

enum class Compression { none, gzip, zlib, xz, zstd };

std::string_view compression_name(Compression c);

// Which compression the data starts with; Compression::none when no known magic matches.
// Throws InputError for formats we recognise but do not read (bzip2, lzip, lz4, legacy .lzma).
Compression detect_compression(std::string_view data, const std::string& file);

// A decompression bomb guard: more output than this is refused, before the whole of it is
// produced: 1 TiB, far past any snapshot (the unpickler reads pickles of any size), while the
// ratio below stops bombs long before. No buffer is ever sized by a length the compressed data
// declares: output buffers start from the input's size and double.
inline constexpr uint64_t kDefaultMaxDecompressedBytes = uint64_t{1} << 40;

// The decompressed content of `data` (a copy when it is not compressed). Concatenated gzip
// members, xz streams and zstd frames are all read. Errors are InputError naming `file` and,
// where the decoder can tell, the compressed byte offset at which decoding failed.
std::string decompress(std::string_view data, const std::string& file,
                       uint64_t max_output = kDefaultMaxDecompressedBytes);

// The ceiling for `compressed_bytes` of input: 128 times that, at least 64 MiB, at most
// kDefaultMaxDecompressedBytes. Real snapshots compress 12-30 times (xz); a bomb compresses
// thousands of times, and would otherwise cost gigabytes from a file of a few kilobytes.
inline constexpr uint64_t kMinDecompressionCeiling = uint64_t{64} << 20;
inline constexpr uint64_t kMaxCompressionRatio = 128;
constexpr uint64_t decompression_ceiling(uint64_t compressed_bytes) {
  if (compressed_bytes >= kDefaultMaxDecompressedBytes / kMaxCompressionRatio) return kDefaultMaxDecompressedBytes;
  const uint64_t ceiling = compressed_bytes * kMaxCompressionRatio;
  return ceiling < kMinDecompressionCeiling ? kMinDecompressionCeiling : ceiling;
}

// The whole file at `path`, decompressed; `max_output` 0 means decompression_ceiling() of the
// file's size. Throws InputError when it cannot be read.
std::string read_decompressed(const std::string& path, uint64_t max_output = 0);

// The whole file at `path` as stored (no decompression).
std::string read_file_bytes(const std::string& path);

class StreamingDecoder;

// An input file's content, decompressed: a read-only map of the file itself when it is not
// compressed (no copy, no zero-filled buffer), else the decompressed bytes (under
// decompression_ceiling() of the file's size), decoded on a thread of their own while the
// caller reads behind (growing()): in memory up to 64 MiB, beyond that in an unlinked scratch
// file, mapped. Either way memory does not have to hold the whole input: a reader going front to
// back calls release_before() as it goes.
class InputBytes {
 public:
  // Throws InputError when the file cannot be read; decoding errors come from the calls below.
  explicit InputBytes(const std::string& path);
  ~InputBytes();  // stops the decoder
  InputBytes(const InputBytes&) = delete;
  InputBytes& operator=(const InputBytes&) = delete;
  // The whole content: waits for the decoder to finish, and throws its InputError if it failed.
  std::string_view view() const;
  // The content decoded so far, at least `bytes` of it where the content has that many (waits).
  std::string_view prefix(uint64_t bytes) const;
  // While a compressed input is still being decoded: the content as it grows, to read behind the
  // decoder (pickle::UnpickleOptions::growing); nullptr once view() returned, or when the file is
  // not compressed.
  const GrowingInput* growing() const;
  // When decoding fails, throws its error (after waiting for the decoder to end). A reader of a
  // damaged stream's output fails too, but the decoder's error names the real cause.
  void rethrow_decoding_error() const;
  // The bytes before `offset` will rarely be needed again: mapped pages there are given back
  // (they read back from the file when they are). Nothing happens to bytes held in memory.
  void release_before(uint64_t offset) const;

 private:
  MappedBytes map_;
  std::unique_ptr<StreamingDecoder> decoder_;  // compressed input only; reads map_
  mutable std::string_view view_;
  mutable bool complete_ = false;
  mutable uint64_t released_ = 0;
};

}  // namespace memreplay
