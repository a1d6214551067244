// Stand-ins: a file given where a trace is read that is not itself a .mrt (a PyTorch snapshot
// given to `info`) is converted into an unlinked trace file by results/open_trace.h, which
// registers that file's descriptor here under the original's device and inode. TraceReader, asked
// for the original, reads the stand-in (and names the original in its errors), so that every
// reader of a trace path, on any thread, takes a snapshot without knowing it.
#pragma once

#include <sys/types.h>

namespace memreplay {

// `fd`: a readable trace file that stays open while registered. Replaces an earlier stand-in of
// the same original.
void register_trace_stand_in(dev_t device, ino_t inode, int fd);
void unregister_trace_stand_in(dev_t device, ino_t inode);
// A new descriptor (close-on-exec, the caller closes it) of the stand-in of that file; -1 if none.
int open_trace_stand_in(dev_t device, ino_t inode);

}  // namespace memreplay
