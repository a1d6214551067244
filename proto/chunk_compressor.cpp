#include "proto/chunk_compressor.h"

#include <zstd.h>

#include <new>
#include <stdexcept>

namespace memreplay::format {

void ChunkCompressor::CCtxDeleter::operator()(ZSTD_CCtx_s* ctx) const { ZSTD_freeCCtx(ctx); }

ChunkCompressor::ChunkCompressor() : cctx_(ZSTD_createCCtx()) {
  if (!cctx_) throw std::bad_alloc();
}

ChunkCompressor::~ChunkCompressor() = default;

void ChunkCompressor::compress(std::string_view input, int level, const std::string& path) {
  const size_t bound = ZSTD_compressBound(input.size());
  if (bound > out_capacity_) {
    out_ = std::make_unique_for_overwrite<char[]>(bound);
    out_capacity_ = bound;
  }
  out_size_ = ZSTD_compressCCtx(cctx_.get(), out_.get(), out_capacity_, input.data(), input.size(), level);
  if (ZSTD_isError(out_size_))
    throw std::runtime_error(path + ": zstd compression failed: " + ZSTD_getErrorName(out_size_));
}

}  // namespace memreplay::format
