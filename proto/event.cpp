#include "proto/event.h"

namespace memreplay {
namespace {

constexpr std::array<std::string_view, kEventKindCount> kNames = {
    "",
    "alloc",
    "free_requested",
    "free_completed",
    "segment_alloc",
    "segment_free",
    "segment_map",
    "segment_unmap",
    "snapshot",
    "oom",
    "empty_cache",
    "annotation",
    "stream_create",
    "stream_destroy",
    "event_record",
    "stream_wait_event",
    "synchronize",
    "address_reserve",
    "address_free",
    "physical_alloc",
    "physical_free",
};

struct NamedFlag {
  std::string_view name;
  EventFlag flag;
};
constexpr NamedFlag kFlags[] = {
    {"preexisting", kPreexisting}, {"failed", kFailed}, {"inferred", kInferred}, {"captured", kCaptured}};

}  // namespace

bool is_valid_event_kind(uint32_t value) { return value >= 1 && value < kEventKindCount; }

std::string_view event_kind_name(EventKind kind) {
  const auto index = static_cast<uint32_t>(kind);
  return is_valid_event_kind(index) ? kNames[index] : std::string_view("invalid");
}

std::optional<EventKind> event_kind_from_name(std::string_view name) {
  for (uint32_t i = 1; i < kEventKindCount; ++i)
    if (kNames[i] == name) return static_cast<EventKind>(i);
  return std::nullopt;
}

std::optional<EventFlag> event_flag_from_name(std::string_view name) {
  for (const NamedFlag& f : kFlags)
    if (f.name == name) return f.flag;
  return std::nullopt;
}

}  // namespace memreplay
