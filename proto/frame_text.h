// Stack frames and annotation metadata as text: what a recorder hands the writer and what the
// reader gives back. Lives in proto/ because recorder/ and replayer/ share nothing else.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memreplay {

struct FrameText {
  std::string filename;
  uint32_t line = 0;
  std::string name;
  friend bool operator==(const FrameText&, const FrameText&) = default;
  friend auto operator<=>(const FrameText&, const FrameText&) = default;
};

// key=value pairs of an annotation event, in recorded order.
using KeyValues = std::vector<std::pair<std::string, std::string>>;

}  // namespace memreplay
