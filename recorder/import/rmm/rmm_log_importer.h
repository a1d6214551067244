// Imports the CSV log of RAPIDS RMM's logging_resource_adaptor (rmm.reinitialize(logging=True)).
//
// Format (RMM cpp/src/mr/detail/logging_resource_adaptor_impl.cpp): a header line
// `Thread,Time,Action,Pointer,Size,Stream`, then one row per call:
//   140234,10:49:47.163838,allocate,0x7f3c8e000000,1024,0x0
//   140234,10:49:47.163901,free,0x7f3c8e000000,1024,0x0
//   140234,10:49:47.164002,allocate failure,(nil),1099511627776,0x5612e3c0
// Columns are found by header name, so another order or missing Thread/Time/Stream columns are
// fine; Action, Pointer and Size are required.
//
// What becomes what (one device, 0):
// - allocate → alloc; free → free_requested and free_completed at the same time (RMM's free
//   returns the memory to the resource at once); allocate failure → oom flagged kFailed with
//   size = bytes asked for (device free bytes are not logged: aux = 0).
// - Pointer: hex as printf's %p writes it ("0x...", "(nil)" for null). Stream: "0x..." hex,
//   "(nil)" or 0 for the default stream, plain digits as decimal (older RMM), other hex digits as hex.
// - Time: HH:MM:SS[.fraction] wall-clock time of day (RMM logs no date: times are taken on day 0,
//   1970-01-01, and a backward jump of more than 12 h is read as passing midnight), or a plain
//   number of seconds. A missing Time column gives time 0.
// - Header: source "rmm-log", source_file, one device; capture time unknown (0).
//
// Rows are streamed to the sink; a bad row throws InputError "FILE: line N, byte B: ..." (B: the
// offset of the field at fault, or of the line, in the decompressed log; the sink then
// never sees finish(), so a TraceWriter leaves no file). sink.finish() is called at the end.
#pragma once

#include <string>
#include <string_view>

#include "proto/trace_sink.h"

namespace memreplay {

void import_rmm_log(const std::string& path, TraceSink& sink);

// The same from the CSV text already in memory; `source_file` names it in the header and errors.
void import_rmm_log_text(std::string_view csv, const std::string& source_file, TraceSink& sink);

// True when `first_line` is an RMM log header (has Action, Pointer and Size columns).
bool is_rmm_log_header(std::string_view first_line);

}  // namespace memreplay
