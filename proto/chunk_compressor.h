// The zstd compression of chunk records, in one place for TraceEncoder and for the chunks an
// importer compresses ahead (recorder/import/chunks_ahead.h): zstd's output depends only on the
// input and the level, so a chunk compressed by either is the same bytes. The context and the
// output buffer are reused chunk after chunk; the buffer is never zero-filled, so only the pages
// zstd writes (a ninth of the bound on gpt2_generate at level 3: 80 KB of 721 KB) cost a page fault.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct ZSTD_CCtx_s;

namespace memreplay::format {

class ChunkCompressor {
 public:
  ChunkCompressor();  // throws std::bad_alloc when zstd has no context to give
  ~ChunkCompressor();
  ChunkCompressor(const ChunkCompressor&) = delete;
  ChunkCompressor& operator=(const ChunkCompressor&) = delete;

  // input -> compressed(); throws std::runtime_error naming `path` on failure.
  void compress(std::string_view input, int level, const std::string& path);
  // Valid until the next compress().
  std::string_view compressed() const { return {out_.get(), out_size_}; }

 private:
  struct CCtxDeleter {
    void operator()(ZSTD_CCtx_s* ctx) const;
  };
  std::unique_ptr<ZSTD_CCtx_s, CCtxDeleter> cctx_;
  std::unique_ptr<char[]> out_;
  size_t out_capacity_ = 0, out_size_ = 0;
};

}  // namespace memreplay::format
