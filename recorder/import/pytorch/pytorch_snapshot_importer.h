// Imports a PyTorch memory snapshot: the dict `torch.cuda.memory._snapshot()` returns, pickled by
// `_dump_snapshot()` (optionally compressed, see decompress.h). Reads it with the data-only
// unpickler (pickle_reader.h): a snapshot never gets to run code.
//
// What becomes what:
// - device_traces[d][i] → one event on device d per entry, every action: alloc, free_requested,
//   free_completed, segment_alloc/free/map/unmap, snapshot, oom (size = request, aux =
//   device_free), and ≈2.4's user_defined (→ annotation carrying its user_metadata). addr →
//   address, size → size, stream → stream, time_us × 1000 → time_ns (0 when an old PyTorch did
//   not record it), frames → a stack interned in the sink.
// - external_annotations → annotation events (key/values = every entry but device and time_us),
//   placed in time order among their device's events (after events of the same time).
// - allocator_settings → header.allocator_settings, flattened to strings: nested dict keys are
//   joined with '.' ("roundup_power2_divisions.1" = "0"), bools are "True"/"False" as in
//   PYTORCH_CUDA_ALLOC_CONF, floats use Python's repr ("0.0"), None is "None".
// - A trace that does not start from an empty allocator (ring buffer wrapped, or recording began
//   late) gets the state at its first entry rebuilt from the final `segments` state
//   (allocator_state.h): kPreexisting segment_alloc/segment_map/alloc events come first and
//   header.starts_mid_run is set. Applying all events forward reproduces `segments` exactly.
// - torch.cuda.empty_cache() calls are inferred from their segment releases
//   (empty_cache_inference.h) and emitted as kInferred empty_cache events.
// - Order: preexisting events of every device, then each device's events in trace order; several
//   devices are merged by time, stably (ties go to the lower device).
// - Header: source "pytorch-snapshot", source_file, one DeviceInfo per device index seen (name
//   and memory unknown), capture_time_ns = time of the latest trace entry.
//
// Errors are InputError: pickle problems name the byte offset, a bad trace entry names its index
// ("FILE: event 12: device 0 trace entry: ..."), an unknown action names the action. The whole
// snapshot is checked before the sink sees anything; sink.finish() is called at the end.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "proto/trace_sink.h"
#include "recorder/import/input/decompress.h"

namespace memreplay {

struct SnapshotContent;
class ChunksAhead;

// Reads (and decompresses) the snapshot at `path` and writes it to `sink`: begin, events, finish.
void import_pytorch_snapshot(const std::string& path, TraceSink& sink);

// The same from an input file's content (decompress.h): a compressed one is read behind its
// decoder's thread (InputBytes::growing), and a decoding error wins over the reader's own (the
// reader of a damaged stream fails too, but the decoder names the cause).
void import_pytorch_snapshot_input(const InputBytes& input, const std::string& path, TraceSink& sink);

// The same from the pickle bytes already in memory (or mapped); `source_file` names them in the
// header and in error messages. The trace entries are streamed out of the pickle as it is read
// (pickle::DeviceTraceSink) into scratch files past a million entries (step_spool.h), so memory
// follows the snapshot's segments and stacks, not its length; `progress` is told how far the
// reading has come (InputBytes::release_before). With `growing` (a decompressor on another
// thread), `pickle_bytes` is what is there so far and the rest is read as it comes; nothing
// reaches the sink before the whole input is there and decoded without error. A sink that takes
// encoded chunks (TraceSink::encoded_chunk_format, TraceWriter) gets them encoded and compressed
// while the pickle is read where the output stage adds nothing to the entries (chunks_ahead.h).
void import_pytorch_snapshot_pickle(std::string_view pickle_bytes, const std::string& source_file, TraceSink& sink,
                                    const std::function<void(uint64_t)>& progress = {},
                                    const GrowingInput* growing = nullptr);

// The output stage alone, for a snapshot read by other means (snapshot_tree_reader.h: a Python
// dict walked in memory): the state passes, then the events to `sink`, begin to finish. `ahead`:
// the ChunksAhead the reader told of every entry, or null.
void write_snapshot_content(SnapshotContent& content, TraceSink& sink, ChunksAhead* ahead);

}  // namespace memreplay
