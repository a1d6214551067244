#include "recorder/import/input/decompress.h"

#include <fcntl.h>
#include <lzma.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "base/input_file.h"
#include "proto/input_error.h"
#include "recorder/import/input/scratch_file.h"

namespace memreplay {
namespace {

bool starts_with(std::string_view data, std::string_view magic) {
  return data.size() >= magic.size() && data.substr(0, magic.size()) == magic;
}

// A zlib header is two bytes: CMF (method 8 = deflate, window <= 32 KiB) and FLG, with
// CMF*256+FLG a multiple of 31. No preset dictionary: we could not supply one.
bool is_zlib_header(std::string_view data) {
  if (data.size() < 2) return false;
  const auto cmf = static_cast<uint8_t>(data[0]);
  const auto flg = static_cast<uint8_t>(data[1]);
  return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && (cmf * 256 + flg) % 31 == 0 && (flg & 0x20) == 0;
}

std::string format_bytes(uint64_t n) {
  if (n % (1ull << 30) == 0) return std::to_string(n >> 30) + " GiB";
  if (n % (1ull << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

InputError bomb_error(const std::string& file, uint64_t consumed_input, uint64_t max_output) {
  return InputError::at_byte(file, consumed_input,
                             "decompressed data exceeds the " + format_bytes(max_output) +
                                 " limit (128 times the compressed size, at least 64 MiB, at "
                                 "most " +
                                 format_bytes(kDefaultMaxDecompressedBytes) +
                                 "): a decompression bomb, or decompress it first");
}

// The output of decompress(): a buffer that grows geometrically up to the caller's cap, so a
// small file that claims to expand to terabytes fails cleanly instead of exhausting memory.
class Output {
 public:
  // `input_bytes` (what is really there, never a length the data declares) sizes the first
  // buffer; it then doubles as output arrives.
  Output(const std::string& file, uint64_t max_output, uint64_t input_bytes) : file_(file), max_(max_output) {
    const uint64_t first = std::min<uint64_t>(std::max<uint64_t>(input_bytes * 4, 1 << 16), kMaxFirstBuffer);
    buf_.resize(static_cast<size_t>(std::min<uint64_t>(first, max_)));
  }
  // Free space after `used`, growing the buffer first when it is full.
  char* space(uint64_t consumed_input) {
    if (used_ == buf_.size()) {
      if (used_ >= max_) throw bomb_error(file_, consumed_input, max_);
      buf_.resize(static_cast<size_t>(std::min<uint64_t>(buf_.size() * 2, max_)));
    }
    return buf_.data() + used_;
  }
  size_t available() const { return static_cast<size_t>(std::min<uint64_t>(buf_.size() - used_, max_ - used_)); }
  void produced(size_t n) { used_ += n; }
  std::string take() {
    buf_.resize(used_);
    return std::move(buf_);
  }

 private:
  static constexpr uint64_t kMaxFirstBuffer = uint64_t{64} << 20;
  const std::string& file_;
  uint64_t max_;
  std::string buf_;
  size_t used_ = 0;
};

constexpr size_t kMaxChunk = std::numeric_limits<uInt>::max();

template <typename Out>
void inflate_all(std::string_view data, const std::string& file, const char* what, Out& out) {
  z_stream s{};
  // 15 + 32: accept both the zlib and the gzip wrapper (auto-detected by zlib).
  if (inflateInit2(&s, 15 + 32) != Z_OK) throw InputError(file + ": zlib initialisation failed");
  struct Guard {
    z_stream* s;
    ~Guard() { inflateEnd(s); }
  } guard{&s};
  size_t in_pos = 0;
  for (;;) {
    s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_pos));
    s.avail_in = static_cast<uInt>(std::min(data.size() - in_pos, kMaxChunk));
    const uInt given_in = s.avail_in;
    s.next_out = reinterpret_cast<Bytef*>(out.space(in_pos));
    s.avail_out = static_cast<uInt>(std::min(out.available(), kMaxChunk));
    const uInt given_out = s.avail_out;
    const int rc = inflate(&s, Z_NO_FLUSH);
    in_pos += given_in - s.avail_in;
    out.produced(given_out - s.avail_out);
    if (rc == Z_STREAM_END) {
      if (in_pos == data.size()) return;
      // pigz and `cat a.gz b.gz` write several gzip members: keep going.
      if (starts_with(data.substr(in_pos), "\x1f\x8b") && inflateReset(&s) == Z_OK) continue;
      throw InputError::at_byte(file, in_pos, std::string("unexpected data after the end of the ") + what + " stream");
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR) {  // no progress: either the output is full (grow) or input ran out
      if (s.avail_out > 0 && in_pos == data.size())
        throw InputError::at_byte(file, in_pos, std::string(what) + " stream is truncated");
      continue;
    }
    throw InputError::at_byte(file, in_pos,
                              std::string("corrupt ") + what + " stream: " + (s.msg ? s.msg : zError(rc)));
  }
}

std::string lzma_error_text(lzma_ret rc) {
  switch (rc) {
    case LZMA_MEM_ERROR: return "out of memory";
    case LZMA_MEMLIMIT_ERROR: return "memory limit reached";
    case LZMA_FORMAT_ERROR: return "not an xz stream";
    case LZMA_OPTIONS_ERROR: return "unsupported xz options";
    case LZMA_DATA_ERROR: return "corrupt xz data";
    case LZMA_BUF_ERROR: return "xz stream is truncated";
    default: return "xz decoder error " + std::to_string(static_cast<int>(rc));
  }
}

template <typename Out>
void unxz_all(std::string_view data, const std::string& file, Out& out) {
  lzma_stream s = LZMA_STREAM_INIT;
  // CONCATENATED: `xz` itself accepts several streams one after the other.
  if (lzma_stream_decoder(&s, UINT64_MAX, LZMA_CONCATENATED) != LZMA_OK)
    throw InputError(file + ": xz decoder initialisation failed");
  struct Guard {
    lzma_stream* s;
    ~Guard() { lzma_end(s); }
  } guard{&s};
  s.next_in = reinterpret_cast<const uint8_t*>(data.data());
  s.avail_in = data.size();
  for (;;) {
    s.next_out = reinterpret_cast<uint8_t*>(out.space(s.total_in));
    s.avail_out = out.available();
    const size_t given_out = s.avail_out;
    const lzma_ret rc = lzma_code(&s, LZMA_FINISH);
    out.produced(given_out - s.avail_out);
    if (rc == LZMA_STREAM_END) return;
    if (rc != LZMA_OK) {
      const uint64_t at = rc == LZMA_BUF_ERROR ? data.size() : s.total_in;
      throw InputError::at_byte(file, at, lzma_error_text(rc));
    }
  }
}

template <typename Out>
void unzstd_all(std::string_view data, const std::string& file, Out& out) {
  ZSTD_DStream* z = ZSTD_createDStream();
  if (z == nullptr) throw InputError(file + ": zstd decoder initialisation failed");
  struct Guard {
    ZSTD_DStream* z;
    ~Guard() { ZSTD_freeDStream(z); }
  } guard{z};
  // Not sized by the frame's declared content size (20 bytes can declare terabytes): see Output.
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  size_t last = 0;
  for (;;) {
    ZSTD_outBuffer o{out.space(in.pos), out.available(), 0};
    last = ZSTD_decompressStream(z, &o, &in);
    out.produced(o.pos);
    if (ZSTD_isError(last))
      throw InputError::at_byte(file, in.pos, std::string("corrupt zstd stream: ") + ZSTD_getErrorName(last));
    // A frame is complete (last == 0) and all input is used: done. Output that did not fill
    // the buffer with input left over means the decoder wants more input that does not exist.
    if (in.pos == data.size() && last == 0) return;
    if (in.pos == data.size() && o.pos < o.size)
      throw InputError::at_byte(file, data.size(), "zstd stream is truncated");
  }
}

// Decodes `data`, compressed as `c`, into `out` (Output, or StreamingDecoder's output side): each
// decoder asks out.space(input consumed) for room, fills at most out.available() bytes there and
// reports them with out.produced(n).
template <typename Out>
void decode(Compression c, std::string_view data, const std::string& file, Out& out) {
  switch (c) {
    case Compression::gzip: return inflate_all(data, file, "gzip", out);
    case Compression::zlib: return inflate_all(data, file, "zlib", out);
    case Compression::xz: return unxz_all(data, file, out);
    case Compression::zstd: return unzstd_all(data, file, out);
    case Compression::none: break;
  }
}

}  // namespace

// Decodes a compressed input on its own thread while the reader reads behind it (GrowingInput):
// on a 2-core machine the xz decoding of a snapshot and its unpickling then take the time of the
// slower of the two, not of both. The output goes, in order, to one range reserved up front
// (address space only, the decompression ceiling of the compressed size; pages cost memory as
// they are written). Up to kSpillBytes it is anonymous memory; past that the decoder moves it to
// an unlinked scratch file, mapped over the same range (the same bytes at the same addresses), and
// appends there, so resident memory is the reader's window, not the input (release_before).
class StreamingDecoder final : public GrowingInput {
 public:
  static constexpr uint64_t kSpillBytes = uint64_t{64} << 20;

  StreamingDecoder(Compression c, const MappedBytes& compressed, const std::string& file)
      : compression_(c), compressed_(compressed), file_(file), max_(decompression_ceiling(compressed.size())) {
    reserved_ = static_cast<size_t>(max_);
    void* range =
        ::mmap(nullptr, reserved_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED)
      throw InputError(file + ": cannot reserve address space to decompress into: " + std::strerror(errno));
    base_ = static_cast<char*>(range);
    // Huge pages where the kernel has them: the decoder writes every byte of the range once, and
    // 4 KiB faults on it cost it (the busiest thread) a tenth of its time.
    ::madvise(base_, reserved_, MADV_HUGEPAGE);
    thread_ = std::thread([this] { run(); });
  }
  ~StreamingDecoder() override {
    cancel_.store(true, std::memory_order_relaxed);
    thread_.join();
    ::munmap(base_, reserved_);
  }
  StreamingDecoder(const StreamingDecoder&) = delete;
  StreamingDecoder& operator=(const StreamingDecoder&) = delete;

  const char* data() const override { return base_; }
  uint64_t wait_for(uint64_t bytes) const override {
    std::unique_lock lock(mutex_);
    grew_.wait(lock, [&] { return available_ >= bytes || done_; });
    if (error_) std::rethrow_exception(error_);
    return available_;
  }
  // Waits for the decoder to end; throws its error if it failed.
  void rethrow_error() const {
    std::unique_lock lock(mutex_);
    grew_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(error_);
  }
  void release_before(uint64_t offset) const {
    if (!spilled_.load(std::memory_order_acquire)) return;  // anonymous memory cannot read back
    static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t end = offset / page * page;
    if (end > released_) ::madvise(base_ + released_, static_cast<size_t>(end - released_), MADV_DONTNEED);
    released_ = std::max(released_, end);
  }

  // The output side, called by decode() on the decoder thread.
  char* space(uint64_t consumed_input) {
    if (cancel_.load(std::memory_order_relaxed)) throw Cancelled{};
    if (consumed_input >= next_input_release_) {  // the compressed pages behind the decoder
      compressed_.release(0, static_cast<size_t>(consumed_input));
      next_input_release_ = consumed_input + kInputReleaseBytes;
    }
    if (total_ >= max_) throw bomb_error(file_, consumed_input, max_);
    if (total_ == kSpillBytes && spill_ == nullptr) spill();
    return spill_ != nullptr ? step_.data() : base_ + total_;
  }
  size_t available() const { return static_cast<size_t>(std::min<uint64_t>(step_bytes(), max_ - total_)); }
  void produced(size_t n) {
    if (n == 0) return;
    if (spill_ != nullptr) spill_->append(step_.data(), n);
    total_ += n;
    publish(false);
  }

 private:
  struct Cancelled {};
  static constexpr uint64_t kStepBytes = uint64_t{256} << 10;  // how often the reader is told
  static constexpr uint64_t kInputReleaseBytes = uint64_t{16} << 20;

  // Steps end at kSpillBytes, so that the move to the scratch file happens between two of them.
  uint64_t step_bytes() const { return total_ < kSpillBytes ? std::min(kStepBytes, kSpillBytes - total_) : kStepBytes; }
  void run() {
    try {
      decode(compression_, std::string_view(compressed_.data(), compressed_.size()), file_, *this);
      publish(true);
    } catch (const Cancelled&) {
      publish(true);
    } catch (...) {
      {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
      }
      publish(true);
    }
  }
  void publish(bool done) {
    {
      std::lock_guard lock(mutex_);
      available_ = total_;
      done_ = done_ || done;
    }
    grew_.notify_all();
  }
  void spill() {
    spill_ = std::make_unique<ScratchFile>(file_);
    spill_->append(base_, static_cast<size_t>(total_));
    spill_->map_over(base_, reserved_);
    step_.resize(static_cast<size_t>(kStepBytes));
    spilled_.store(true, std::memory_order_release);
  }

  const Compression compression_;
  const MappedBytes& compressed_;
  const std::string file_;
  const uint64_t max_;
  char* base_ = nullptr;
  size_t reserved_ = 0;
  // Decoder thread only.
  uint64_t total_ = 0;
  uint64_t next_input_release_ = kInputReleaseBytes;
  std::unique_ptr<ScratchFile> spill_;
  std::string step_;
  // Shared.
  mutable std::mutex mutex_;
  mutable std::condition_variable grew_;
  uint64_t available_ = 0;
  bool done_ = false;
  std::exception_ptr error_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> spilled_{false};
  // Reader thread only.
  mutable uint64_t released_ = 0;
  std::thread thread_;
};

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::none: return "none";
    case Compression::gzip: return "gzip";
    case Compression::zlib: return "zlib";
    case Compression::xz: return "xz";
    case Compression::zstd: return "zstd";
  }
  return "unknown";
}

Compression detect_compression(std::string_view data, const std::string& file) {
  if (starts_with(data, "\x1f\x8b")) return Compression::gzip;
  if (starts_with(data, std::string_view("\xfd"
                                         "7zXZ\0",
                                         6)))
    return Compression::xz;
  if (starts_with(data, "\x28\xb5\x2f\xfd")) return Compression::zstd;
  if (is_zlib_header(data)) return Compression::zlib;
  // Known, but not worth a dependency: say so rather than fail later with "unknown format".
  auto refuse = [&](const char* name) {
    return InputError(file + ": " + name + "-compressed input is not supported; use xz, gzip or zstd");
  };
  if (starts_with(data, "BZh")) throw refuse("bzip2");
  if (starts_with(data, "LZIP")) throw refuse("lzip");
  if (starts_with(data, "\x04\x22\x4d\x18")) throw refuse("lz4");
  return Compression::none;
}

std::string decompress(std::string_view data, const std::string& file, uint64_t max_output) {
  const Compression c = detect_compression(data, file);
  if (c == Compression::none) return std::string(data);
  Output out(file, max_output, data.size());
  decode(c, data, file, out);
  return out.take();
}

std::string read_file_bytes(const std::string& path) {
  const int fd = open_input_file(path);  // a FIFO or device is refused, without blocking
  struct stat st {};
  ::fstat(fd, &st);
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t have = 0;
  while (have < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + have, bytes.size() - have, static_cast<off_t>(have));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw InputError(path + ": read failed" + (n < 0 ? std::string(": ") + std::strerror(errno) : ""));
    }
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  return bytes;
}

InputBytes::InputBytes(const std::string& path) {
  const int fd = open_input_file(path);  // a FIFO or device is refused, without blocking
  struct stat st {};
  ::fstat(fd, &st);
  try {
    // Not populated up front: the importers read front to back and release() what they passed.
    map_ = MappedBytes(fd, static_cast<size_t>(st.st_size), path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  const std::string_view raw(map_.data(), map_.size());
  const Compression c = detect_compression(raw, path);
  if (c == Compression::none) {
    view_ = raw;
    complete_ = true;
    return;
  }
  decoder_ = std::make_unique<StreamingDecoder>(c, map_, path);
}

InputBytes::~InputBytes() = default;

std::string_view InputBytes::view() const {
  if (!complete_) {
    decoder_->rethrow_error();
    view_ = std::string_view(decoder_->data(), decoder_->wait_for(UINT64_MAX));
    complete_ = true;
  }
  return view_;
}

std::string_view InputBytes::prefix(uint64_t bytes) const {
  if (complete_) return view_;
  return std::string_view(decoder_->data(), decoder_->wait_for(bytes));
}

const GrowingInput* InputBytes::growing() const { return complete_ ? nullptr : decoder_.get(); }

void InputBytes::rethrow_decoding_error() const {
  if (decoder_ != nullptr) decoder_->rethrow_error();
}

void InputBytes::release_before(uint64_t offset) const {
  if (decoder_ != nullptr) return decoder_->release_before(offset);
  if (offset > released_) {
    map_.release(static_cast<size_t>(released_), static_cast<size_t>(offset));
    released_ = offset;
  }
}

std::string read_decompressed(const std::string& path, uint64_t max_output) {
  std::string raw = read_file_bytes(path);
  if (detect_compression(raw, path) == Compression::none) return raw;
  return decompress(raw, path, max_output != 0 ? max_output : decompression_ceiling(raw.size()));
}

}  // namespace memreplay
