// `memreplay import` end to end on arbitrary file bytes: the input is written to a memfd and
// imported by import_file(), the function cmd_import calls, into a sink that keeps nothing. A
// compressed input (told by content) is decoded by StreamingDecoder on its own thread while the
// streaming unpickler reads behind it (GrowingInput::wait_for); a plain one is mapped. A refusal
// (InputError) or a whole trace, never anything else.
//
// Random bytes rarely survive a decoder's checks, so most mutations happen inside the compression:
// the custom mutator decompresses a compressed input, mutates the pickle, and compresses it again
// the same way (gzip, zlib, xz or zstd); one mutation in four, and every input that does not
// decode, is mutated as stored, so damaged streams reach the reader too.
#include <sys/mman.h>
#include <unistd.h>

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <string_view>

#include "fuzz/counting_sink.h"
#include "proto/input_error.h"
#include "recorder/import/decompress.h"
#include "recorder/import/import.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using memreplay::Compression;

using memreplay::fuzz::CountingSink;

// One memfd for the whole run, rewritten for every input; import_file opens it by its /proc path.
int input_fd() {
  static const int fd = [] {
    const int f = ::memfd_create("compressed_import_fuzz", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}

// `plain` compressed as `c`, as the usual tools write it; empty when the library refuses.
std::string compress(Compression c, std::string_view plain) {
  std::string out;
  switch (c) {
    case Compression::gzip:
    case Compression::zlib: {
      z_stream z{};
      if (deflateInit2(&z, 6, Z_DEFLATED, c == Compression::gzip ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return {};
      out.resize(deflateBound(&z, static_cast<uLong>(plain.size())) + 32);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
      z.avail_in = static_cast<uInt>(plain.size());
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      const int rc = deflate(&z, Z_FINISH);
      out.resize(z.total_out);
      deflateEnd(&z);
      return rc == Z_STREAM_END ? out : std::string();
    }
    case Compression::xz: {
      // Preset 0 (a 256 KiB dictionary): the encoder of preset 6 allocates ~94 MB per call.
      out.resize(lzma_stream_buffer_bound(plain.size()));
      size_t pos = 0;
      if (lzma_easy_buffer_encode(0, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(plain.data()),
                                  plain.size(), reinterpret_cast<uint8_t*>(out.data()), &pos, out.size()) != LZMA_OK)
        return {};
      out.resize(pos);
      return out;
    }
    case Compression::zstd: {
      ZSTD_CCtx* cctx = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);  // as the zstd CLI writes
      out.resize(ZSTD_compressBound(plain.size()));
      const size_t n = ZSTD_compress2(cctx, out.data(), out.size(), plain.data(), plain.size());
      ZSTD_freeCCtx(cctx);
      if (ZSTD_isError(n)) return {};
      out.resize(n);
      return out;
    }
    case Compression::none: break;
  }
  return {};
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  const std::string_view stored(reinterpret_cast<const char*>(data), size);
  Compression c = Compression::none;
  try {
    c = memreplay::detect_compression(stored, "mutate");
  } catch (const memreplay::InputError&) {
  }
  if (c != Compression::none && rng() % 4 != 0) {
    try {
      std::string plain = memreplay::decompress(stored, "mutate", uint64_t{1} << 20);
      const size_t old = plain.size();
      plain.resize(std::max<size_t>(old * 2, 4096));
      plain.resize(LLVMFuzzerMutate(reinterpret_cast<uint8_t*>(plain.data()), old, plain.size()));
      const std::string packed = compress(c, plain);
      if (!packed.empty() && packed.size() <= max_size) {
        std::memcpy(data, packed.data(), packed.size());
        return packed.size();
      }
    } catch (const memreplay::InputError&) {
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = input_fd();
  if (::ftruncate(fd, 0) != 0) std::abort();
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  CountingSink sink;
  try {
    memreplay::import_file("/proc/self/fd/" + std::to_string(fd), sink);
  } catch (const memreplay::InputError&) {
  }
  return 0;
}
