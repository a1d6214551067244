// What a private pool is, from PyTorch's MempoolId_t, as both extensions write it into a trace
// (the recorder's tracker and the live allocator): "graph" for a capture's own pool (N, 0),
// "mempool" for torch.cuda.MemPool and graph_pool_handle() ids (0, N), which look alike.
#pragma once

#include <cstdint>

namespace memreplay_torch {

inline const char* pool_kind(uint64_t torch_id_second) { return torch_id_second == 0 ? "graph" : "mempool"; }

}  // namespace memreplay_torch
