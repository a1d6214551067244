// Device's public entry (device.h): the contract checks and the counting every device shares, and
// the cold path of free_held().
#include "policies/device.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace memreplay {
namespace {

// More address space than any GPU's VA: a larger reservation can only be a size gone wrong.
constexpr uint64_t kMaxReservationBytes = uint64_t{1} << 56;

std::string range_text(uint64_t address, uint64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof text, "[0x%llx, +%llu)", static_cast<unsigned long long>(address),
                static_cast<unsigned long long>(bytes));
  return text;
}

[[noreturn]] void contract_error(const char* call, uint64_t address, uint64_t bytes, const char* why) {
  throw std::logic_error(std::string("Device::") + call + " of " + range_text(address, bytes) + ": " + why);
}

}  // namespace

void Device::set_memory(uint64_t total_memory, std::optional<uint64_t> capacity) {
  total_memory_ = total_memory;
  capacity_ = capacity;
  limit_ = capacity ? std::min(*capacity, total_memory) : total_memory;
}

uint64_t Device::free_memory() const { return std::min(room(), do_free_memory()); }

std::optional<uint64_t> Device::reserve_address(uint64_t bytes) {
  if (bytes == 0 || bytes > kMaxReservationBytes) return std::nullopt;
  const std::optional<uint64_t> address = timed([&] { return do_reserve_address(bytes); });
  if (!address) return std::nullopt;
  reservations_.emplace(*address, bytes);
  ++counters_.reserve_calls;
  return address;
}

void Device::release_address(uint64_t address, uint64_t bytes) {
  const auto reservation = reservations_.find(address);
  if (reservation == reservations_.end() || reservation->second != bytes)
    contract_error("release_address", address, bytes, "not a live reservation");
  const auto mapped = mapped_.lower_bound(address);
  if ((mapped != mapped_.end() && mapped->first < address + bytes) ||
      (mapped != mapped_.begin() && std::prev(mapped)->second > address))
    contract_error("release_address", address, bytes, "pages in it are still mapped");
  timed([&] { do_release_address(address, bytes); });
  reservations_.erase(reservation);
  ++counters_.release_calls;
}

void Device::check_pages(const char* call, uint64_t address, uint64_t bytes) const {
  const uint64_t page = granularity();
  if (bytes == 0 || address % page != 0 || bytes % page != 0 || bytes > UINT64_MAX - address)
    contract_error(call, address, bytes, "not whole pages");
  auto reservation = reservations_.upper_bound(address);
  if (reservation == reservations_.begin() ||
      std::prev(reservation)->first + std::prev(reservation)->second < address + bytes)
    contract_error(call, address, bytes, "outside every live reservation");
}

bool Device::admit(uint64_t bytes) {
  const bool fits = bytes <= room();
  admitted_up_to_ = fits ? counters_.reserved_bytes + bytes : 0;
  return fits;
}

bool Device::map(uint64_t address, uint64_t bytes) {
  check_pages("map", address, bytes);
  // Under an admission (admit()), past the cap but never past the device's own memory.
  const uint64_t reserved = counters_.reserved_bytes;
  const bool admitted = reserved < admitted_up_to_;
  if (bytes > (admitted ? total_memory_ - std::min(total_memory_, reserved) : room())) {
    ++counters_.failed_calls;
    return false;
  }
  if (!mapped_.insert(address, address + bytes)) contract_error("map", address, bytes, "pages already mapped");
  if (!timed([&] { return do_map(address, bytes); })) {
    mapped_.erase(address, address + bytes);
    ++counters_.failed_calls;
    return false;
  }
  ++counters_.map_calls;
  add_reserved(bytes);
  if (counters_.reserved_bytes >= admitted_up_to_) admitted_up_to_ = 0;  // what was admitted is mapped
  return true;
}

void Device::unmap(uint64_t address, uint64_t bytes) {
  check_pages("unmap", address, bytes);
  if (!mapped_.erase(address, address + bytes)) contract_error("unmap", address, bytes, "pages not mapped");
  timed([&] { do_unmap(address, bytes); });
  ++counters_.unmap_calls;
  remove_reserved(bytes);
}

std::optional<uint64_t> Device::pool_malloc_async(uint64_t bytes, StreamId stream) {
  // The pool holds at least what is in use: past the room left it could only grow past the cap.
  const uint64_t growth_room = room();
  const uint64_t pool_room = counters_.pool_reserved_bytes + growth_room - counters_.pool_used_bytes;
  if (bytes == 0 || bytes > pool_room) {
    ++counters_.failed_calls;
    return std::nullopt;
  }
  const std::optional<uint64_t> address = timed([&] { return do_pool_malloc_async(bytes, stream, growth_room); });
  if (!address) {
    ++counters_.failed_calls;
    after_pool_call();  // a real pool may keep some of a growth it gave back
    return std::nullopt;
  }
  ++counters_.pool_malloc_calls;
  counters_.pool_used_bytes += bytes;
  counters_.pool_used_peak = std::max(counters_.pool_used_peak, counters_.pool_used_bytes);
  after_pool_call();
  if (counters_.reserved_bytes > limit_)
    throw std::logic_error("Device::pool_malloc_async: the pool grew past the room it was given");
  return address;
}

bool Device::pool_free_async(uint64_t address) {
  const uint64_t call_ns = counters_.device_call_ns;
  const std::optional<uint64_t> bytes = timed([&] { return do_pool_free_async(address); });
  if (!bytes) {
    counters_.device_call_ns = call_ns;  // refused before the driver: the call changes nothing
    return false;
  }
  ++counters_.pool_free_calls;
  counters_.pool_used_bytes -= *bytes;
  return true;
}

void Device::pool_trim(uint64_t keep_bytes) {
  timed([&] { do_pool_trim(keep_bytes); });
  ++counters_.pool_trim_calls;
  after_pool_call();
}

void Device::synchronize() {
  timed([&] { do_synchronize(); });
  after_pool_call();
}

void Device::after_pool_call() {
  const uint64_t reserved = timed([&] { return do_pool_reserved_bytes(); });
  const uint64_t before = counters_.pool_reserved_bytes;
  if (reserved == before) [[likely]]
    return;
  if (reserved > before) {
    ++counters_.pool_grow_calls;
    add_reserved(reserved - before);
  } else {
    remove_reserved(before - reserved);
  }
  counters_.pool_reserved_bytes = reserved;
  counters_.pool_reserved_peak = std::max(counters_.pool_reserved_peak, reserved);
}

namespace detail {

void throw_refused_free(uint64_t address) {
  char text[96];
  std::snprintf(text, sizeof text, "the device refused the free of 0x%llx, which its caller believed it held",
                static_cast<unsigned long long>(address));
  throw std::logic_error(text);
}

}  // namespace detail
}  // namespace memreplay
