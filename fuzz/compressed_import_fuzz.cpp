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
#include <vector>

#include "fuzz/counting_sink.h"
#include "proto/input_error.h"
#include "recorder/import/import.h"
#include "recorder/import/input/decompress.h"

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

// The mutator's codecs, one decoder and one encoder per format, made once and reset for every
// input, decoding into one buffer: a fresh codec and buffer per mutation (tables allocated,
// zeroed and freed into ASan's quarantine, so every call touches new pages) cost more than the
// import under test. The encoders at their fastest setting: the codecs are Debian's
// uninstrumented libraries, so how well a level compresses changes no edge libFuzzer can see,
// only how long a mutation takes.
class Codecs {
 public:
  static constexpr size_t kMaxPlain = size_t{1} << 20;  // larger pickles are mutated as stored

  Codecs() {
    if (inflateInit2(&inflate_, 15 + 32) != Z_OK) std::abort();  // + 32: gzip or zlib, by header
    for (int i = 0; i < 2; ++i)  // windowBits 15 + 16: the gzip wrapper; 15: zlib's
      if (deflateInit2(&deflate_[i], 1, Z_DEFLATED, i == 0 ? 15 + 16 : 15, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
    ZSTD_CCtx_setParameter(zstd_, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(zstd_, ZSTD_c_checksumFlag, 1);  // as the zstd CLI writes
    // LZMA2 preset 0 with the smallest dictionary (4 KiB): the mutated pickles are a few KB, and
    // the importer's decoder allocates what the header declares.
    if (lzma_lzma_preset(&lzma_options_, 0)) std::abort();
    lzma_options_.dict_size = LZMA_DICT_SIZE_MIN;
  }
  Codecs(const Codecs&) = delete;
  Codecs& operator=(const Codecs&) = delete;

  // `packed`, compressed as `c`, decoded into out[0, n): n, or 0 when it does not decode whole
  // into kMaxPlain bytes.
  size_t decompress(Compression c, std::string_view packed, uint8_t* out) {
    switch (c) {
      case Compression::gzip:
      case Compression::zlib: {
        if (inflateReset(&inflate_) != Z_OK) return 0;
        inflate_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
        inflate_.avail_in = static_cast<uInt>(packed.size());
        inflate_.next_out = out;
        inflate_.avail_out = static_cast<uInt>(kMaxPlain);
        return inflate(&inflate_, Z_FINISH) == Z_STREAM_END ? inflate_.total_out : 0;
      }
      case Compression::xz: {
        if (lzma_stream_decoder(&unxz_, kMaxPlain * 64, 0) != LZMA_OK) return 0;
        unxz_.next_in = reinterpret_cast<const uint8_t*>(packed.data());
        unxz_.avail_in = packed.size();
        unxz_.next_out = out;
        unxz_.avail_out = kMaxPlain;
        return lzma_code(&unxz_, LZMA_FINISH) == LZMA_STREAM_END ? kMaxPlain - unxz_.avail_out : 0;
      }
      case Compression::zstd: {
        const size_t n = ZSTD_decompressDCtx(unzstd_, out, kMaxPlain, packed.data(), packed.size());
        return ZSTD_isError(n) ? 0 : n;
      }
      case Compression::none: break;
    }
    return 0;
  }

  // `plain` compressed as `c` into out (resized to fit); false when the library refuses.
  bool compress(Compression c, std::string_view plain, std::string& out) {
    switch (c) {
      case Compression::gzip: return deflate_all(deflate_[0], plain, out);
      case Compression::zlib: return deflate_all(deflate_[1], plain, out);
      case Compression::xz: return xz(plain, out);
      case Compression::zstd: {
        out.resize(ZSTD_compressBound(plain.size()));
        const size_t n = ZSTD_compress2(zstd_, out.data(), out.size(), plain.data(), plain.size());
        if (ZSTD_isError(n)) return false;
        out.resize(n);
        return true;
      }
      case Compression::none: break;
    }
    return false;
  }

 private:
  static bool deflate_all(z_stream& z, std::string_view plain, std::string& out) {
    if (deflateReset(&z) != Z_OK) return false;
    out.resize(deflateBound(&z, static_cast<uLong>(plain.size())) + 32);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
    z.avail_in = static_cast<uInt>(plain.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int rc = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    return rc == Z_STREAM_END;
  }
  // An .xz stream with CRC64, as the xz tool writes; the stream is set up again for every input,
  // which liblzma does in the memory of the last one.
  bool xz(std::string_view plain, std::string& out) {
    const lzma_filter filters[] = {{LZMA_FILTER_LZMA2, &lzma_options_}, {LZMA_VLI_UNKNOWN, nullptr}};
    if (lzma_stream_encoder(&lzma_, filters, LZMA_CHECK_CRC64) != LZMA_OK) return false;
    out.resize(lzma_stream_buffer_bound(plain.size()));
    lzma_.next_in = reinterpret_cast<const uint8_t*>(plain.data());
    lzma_.avail_in = plain.size();
    lzma_.next_out = reinterpret_cast<uint8_t*>(out.data());
    lzma_.avail_out = out.size();
    const lzma_ret rc = lzma_code(&lzma_, LZMA_FINISH);
    out.resize(out.size() - lzma_.avail_out);
    return rc == LZMA_STREAM_END;
  }

  z_stream inflate_{};
  lzma_stream unxz_ = LZMA_STREAM_INIT;
  ZSTD_DCtx* unzstd_ = ZSTD_createDCtx();
  z_stream deflate_[2]{};
  ZSTD_CCtx* zstd_ = ZSTD_createCCtx();
  lzma_options_lzma lzma_options_{};
  lzma_stream lzma_ = LZMA_STREAM_INIT;
};

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  const std::string_view stored(reinterpret_cast<const char*>(data), size);
  Compression c = Compression::none;
  try {
    c = memreplay::detect_compression(stored, "mutate");
  } catch (const memreplay::InputError&) {}
  if (c != Compression::none && rng() % 4 != 0) {
    static Codecs codecs;
    static std::vector<uint8_t> plain(2 * Codecs::kMaxPlain);  // the pickle, and room to grow
    static std::string packed;
    const size_t old = codecs.decompress(c, stored, plain.data());
    if (old > 0) {
      const size_t mutated = LLVMFuzzerMutate(plain.data(), old, std::max<size_t>(old * 2, 4096));
      const std::string_view pickle(reinterpret_cast<const char*>(plain.data()), mutated);
      if (codecs.compress(c, pickle, packed) && packed.size() <= max_size) {
        std::memcpy(data, packed.data(), packed.size());
        return packed.size();
      }
    }
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = input_fd();
  // Written over the last input, then cut to size: truncating to 0 first would free the file's
  // pages and make the kernel zero new ones for every input.
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) std::abort();
  CountingSink sink;
  try {
    memreplay::import_file("/proc/self/fd/" + std::to_string(fd), sink);
  } catch (const memreplay::InputError&) {}
  return 0;
}
