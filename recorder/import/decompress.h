// Reads an input file whole and undoes its compression, chosen by the first bytes of the content
// (never by the file name: users rename files, and `.pickle` snapshots are often xz'd in place).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memreplay {

enum class Compression { none, gzip, zlib, xz, zstd };

std::string_view compression_name(Compression c);

// Which compression the data starts with; Compression::none when no known magic matches.
// Throws InputError for formats we recognise but do not read (bzip2, lzip, lz4, legacy .lzma).
Compression detect_compression(std::string_view data, const std::string& file);

// A decompression bomb guard: more output than this is refused. Large enough for any snapshot
// PyTorch can write (its viewer already fails on 1 GB pickles).
inline constexpr uint64_t kDefaultMaxDecompressedBytes = 16ull << 30;

// The decompressed content of `data` (a copy when it is not compressed). Concatenated gzip
// members, xz streams and zstd frames are all read. Errors are InputError naming `file` and,
// where the decoder can tell, the compressed byte offset at which decoding failed.
std::string decompress(std::string_view data, const std::string& file,
                       uint64_t max_output = kDefaultMaxDecompressedBytes);

// The whole file at `path`, decompressed. Throws InputError when it cannot be read.
std::string read_decompressed(const std::string& path,
                              uint64_t max_output = kDefaultMaxDecompressedBytes);

// The whole file at `path` as stored (no decompression).
std::string read_file_bytes(const std::string& path);

}  // namespace memreplay
