// The one way memreplay writes a file: traces, --json FILE, the HTML report, exports, CSVs, check's
// JUnit, Markdown and baseline. Rules, for every writer:
//
//   - A regular file (or a name not there yet) is written whole or not at all: the bytes go to a
//     temporary beside the target, `.NAME.memreplay-tmp.PID.XXXXXX` (unique: concurrent writers of
//     one target never share it, and a user's own NAME.tmp is never touched), renamed onto the
//     target by commit(). Every write() and the close() are checked: on a full disk, a file size
//     limit or any other error the target keeps what it held and commit() is never reached. The
//     temporary is removed by the destructor, and on SIGINT/SIGTERM/SIGHUP (base/temp_file_cleanup.h).
//     It gets the mode of the file it replaces, or 0666 less the umask for a new one.
//   - A symlink is followed: the target file is replaced, the link stays a link.
//   - A device node, FIFO or socket (/dev/null, /dev/stdout, a pipe) is written as such, directly:
//     it is never replaced by a regular file.
//   - An output that is one of the inputs this process declared (protect_input) is refused, by
//     device and inode, so also through a second name or a link: `report s.mrt -o s.mrt` would
//     turn the trace into HTML.
//   - A process killed with SIGKILL cannot remove its temporary: the next OutputFile of the same
//     target removes the temporaries of that target whose process is gone (the PID in the name).
//
// Errors throw InputError, one line naming the path: "out.json: cannot write: No space left on
// device". Not thread-safe (one writer per OutputFile); separate OutputFiles are independent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/temp_file_cleanup.h"

namespace memreplay {

class OutputFile {
 public:
  enum class Mode {
    replace,  // whole or not at all (through the temporary), the default
    in_place,  // the target itself, truncated, written as it goes: a reader sees what was written
  };

  // Opens the target (the temporary, for Mode::replace on a regular file); throws InputError.
  explicit OutputFile(std::string path, Mode mode = Mode::replace);
  // Without commit(): closes, and removes the temporary (the target keeps what it held).
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // All of `bytes`, or InputError naming the path (write errors are sticky: later writes refuse).
  void write(std::string_view bytes);
  // Closes (checked) and puts the file in place; throws InputError on failure. Idempotent.
  void commit();

  // The descriptor written to, for a writer with its own write loop (TraceEncoder); it must not be
  // closed by that writer.
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // The temporary being written, or "" when writing in place (a device, a FIFO, Mode::in_place).
  const std::string& temporary() const { return temporary_; }
  bool committed() const { return committed_; }

 private:
  void open_temporary(const std::string& target, std::optional<uint32_t> mode_of_replaced);
  void discard() noexcept;

  std::string path_;  // as given (errors name it)
  std::string target_;  // where the bytes end up: path_ with its symlinks followed
  std::string temporary_;
  int fd_ = -1;
  bool committed_ = false;
  bool failed_ = false;
  std::optional<TempFileGuard> guard_;
};

// `bytes` into the file at `path` through an OutputFile: whole or not at all.
void write_output_file(const std::string& path, std::string_view bytes);

// Declares a file this process reads: an OutputFile onto it (by device and inode) is refused.
// A path that does not exist is ignored (the read reports it).
void protect_input(const std::string& path);
// Forgets every declared input (tests; a long-lived process between commands).
void clear_protected_inputs();

// The name pattern of temporaries: whether `name` (a file name, no directory) is a temporary of
// the file named `target_name`, and if so the PID that wrote it.
std::optional<int64_t> temporary_owner(std::string_view name, std::string_view target_name);

}  // namespace memreplay
