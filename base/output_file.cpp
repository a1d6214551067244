#include "base/output_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <vector>

#include "base/input_error.h"

namespace memreplay {
namespace {

namespace fs = std::filesystem;

// The target's name in its temporaries, cut so that the whole name stays under NAME_MAX (255).
constexpr size_t kNameInTemporary = 200;
constexpr std::string_view kTemporaryTag = ".memreplay-tmp.";
constexpr size_t kUniqueChars = 6;  // mkstemp's XXXXXX

std::string temporary_prefix(std::string_view target_name) {
  return "." + std::string(target_name.substr(0, kNameInTemporary)) + std::string(kTemporaryTag);
}

InputError file_error(const std::string& path, const char* action, int error) {
  return InputError(path + ": cannot " + action + ": " + std::strerror(error));
}

struct ProtectedInput {
  dev_t device;
  ino_t inode;
  std::string path;
};
std::mutex protected_mutex;
std::vector<ProtectedInput> protected_inputs;

void refuse_protected_input(const std::string& path, const struct stat& st) {
  std::lock_guard lock(protected_mutex);
  for (const ProtectedInput& input : protected_inputs)
    if (input.device == st.st_dev && input.inode == st.st_ino)
      throw InputError(path + ": is also an input of this command (" + input.path +
                       "); refusing to overwrite it (write the output to another file)");
}

// Where the bytes of `path` end up: its symlinks followed, one by one (a dangling link names a
// file to create). nullopt when the chain goes through /proc (/dev/stdout -> /proc/self/fd/1),
// whose links are descriptors rather than names: such a target is written in place.
std::optional<fs::path> follow_symlinks(const std::string& path) {
  fs::path at = path;
  for (int hops = 0; hops < 40; ++hops) {
    if (at.string().starts_with("/proc/")) return std::nullopt;
    std::error_code error;
    if (!fs::is_symlink(fs::symlink_status(at, error))) return at;
    const fs::path to = fs::read_symlink(at, error);
    if (error) throw file_error(path, "follow the symbolic link", error.value());
    at = to.is_absolute() ? to : at.parent_path() / to;
  }
  throw file_error(path, "follow the symbolic link", ELOOP);
}

// 0666 less the umask, read without changing it (umask() would, for every thread at once).
mode_t new_file_mode() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("Umask:")) return 0666 & ~static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
  return 0644;
}

bool process_is_gone(int64_t pid) {
  return pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Temporaries of this target left by processes killed with SIGKILL.
void remove_stale_temporaries(const fs::path& target) {
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string name = target.filename().string();
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const auto owner = temporary_owner(it->path().filename().string(), name);
    if (owner && process_is_gone(*owner)) fs::remove(it->path(), error);
  }
}

}  // namespace

std::optional<int64_t> temporary_owner(std::string_view name, std::string_view target_name) {
  const std::string prefix = temporary_prefix(target_name);
  if (!name.starts_with(prefix)) return std::nullopt;
  name.remove_prefix(prefix.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 10 || name.size() - dot - 1 != kUniqueChars)
    return std::nullopt;
  int64_t pid = 0;
  for (const char c : name.substr(0, dot)) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  return pid;
}

OutputFile::OutputFile(std::string path, Mode mode) : path_(std::move(path)) {
  if (path_.empty()) throw InputError("an output file name is empty");
  install_temp_file_cleanup();
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode)) throw InputError(path_ + ": is a directory, not a file to write");
  if (exists) refuse_protected_input(path_, st);
  const std::optional<fs::path> target = follow_symlinks(path_);
  const bool special = exists && !S_ISREG(st.st_mode);  // a device, FIFO or socket: never replaced
  if (special || !target || mode == Mode::in_place) {
    // A FIFO blocks here until its reader opens it, as a shell's `> fifo` does.
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (special ? 0 : O_CREAT | O_TRUNC), 0666);
    if (fd_ < 0) throw file_error(path_, special ? "open for writing" : "create", errno);
    target_ = path_;
    return;
  }
  target_ = target->string();
  remove_stale_temporaries(*target);
  open_temporary(target_, exists ? std::optional<uint32_t>(st.st_mode & 07777) : std::nullopt);
}

void OutputFile::open_temporary(const std::string& target, std::optional<uint32_t> mode_of_replaced) {
  const fs::path at(target);
  const fs::path dir = at.has_parent_path() ? at.parent_path() : fs::path(".");
  std::string name = (dir / (temporary_prefix(at.filename().string()) + std::to_string(::getpid()) + "." +
                             std::string(kUniqueChars, 'X')))
                         .string();
  fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd_ < 0) throw file_error(path_, "create", errno);
  temporary_ = name;
  guard_.emplace(temporary_);
  const mode_t mode = mode_of_replaced ? static_cast<mode_t>(*mode_of_replaced) : new_file_mode();
  if (::fchmod(fd_, mode) != 0) {
    const int error = errno;
    discard();
    throw file_error(path_, "create", error);
  }
}

OutputFile::~OutputFile() {
  if (!committed_) discard();
}

void OutputFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  guard_.reset();
}

void OutputFile::write(std::string_view bytes) {
  if (failed_ || committed_ || fd_ < 0) throw InputError(path_ + ": cannot write: the file is closed or failed");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed_ = true;
      throw file_error(path_, "write", n < 0 ? errno : EIO);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void OutputFile::commit() {
  if (committed_) return;
  if (failed_ || fd_ < 0) throw InputError(path_ + ": cannot write: an earlier write failed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    failed_ = true;
    throw file_error(path_, "write", errno);
  }
  if (!temporary_.empty() && std::rename(temporary_.c_str(), target_.c_str()) != 0) {
    failed_ = true;
    throw file_error(path_, "put the file in place", errno);
  }
  guard_.reset();
  committed_ = true;
}

void write_output_file(const std::string& path, std::string_view bytes) {
  OutputFile out(path);
  out.write(bytes);
  out.commit();
}

void protect_input(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  std::lock_guard lock(protected_mutex);
  protected_inputs.push_back({st.st_dev, st.st_ino, path});
}

void clear_protected_inputs() {
  std::lock_guard lock(protected_mutex);
  protected_inputs.clear();
}

}  // namespace memreplay
