// Opening an input file: a regular file, or one line saying why not. A FIFO would block the open
// until a writer comes (forever, for a name given by mistake) and a device never ends; both are
// refused at once, without blocking.
#pragma once

#include <string>

namespace memreplay {

// A read-only descriptor (close-on-exec) of the regular file at `path`; InputError naming the
// path when it cannot be opened or is not a regular file. The caller closes it.
int open_input_file(const std::string& path);

}  // namespace memreplay
