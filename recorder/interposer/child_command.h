// How `memreplay record` (and the interposer's tests) start the program to record: its arguments
// and this process's environment with some variables replaced or added, as the null-terminated
// char* arrays that execve and posix_spawn take.
#pragma once

#include <unistd.h>

#include <map>
#include <string>
#include <vector>

namespace memreplay {

class ChildCommand {
 public:
  ChildCommand(std::vector<std::string> arguments, const std::map<std::string, std::string>& overrides)
      : arguments_(std::move(arguments)) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (!overrides.contains(entry.substr(0, entry.find('=')))) environment_.push_back(entry);
    }
    for (const auto& [name, value] : overrides) environment_.push_back(name + "=" + value);
    argv_ = pointers_to(arguments_);
    envp_ = pointers_to(environment_);
  }
  // The arrays point into this object's strings.
  ChildCommand(const ChildCommand&) = delete;
  ChildCommand& operator=(const ChildCommand&) = delete;

  const char* program() const { return argv_[0]; }
  char* const* argv() const { return argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  static std::vector<char*> pointers_to(std::vector<std::string>& strings) {
    std::vector<char*> pointers;
    for (auto& s : strings) pointers.push_back(s.data());
    pointers.push_back(nullptr);
    return pointers;
  }

  std::vector<std::string> arguments_, environment_;
  std::vector<char*> argv_, envp_;
};

}  // namespace memreplay
