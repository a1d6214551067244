#include "results/pickle_writer.h"

#include <bit>
#include <cstring>

namespace memreplay::results {
namespace {

// The opcodes used (Python's Lib/pickletools.py names them).
constexpr char kProto = '\x80', kStop = '.', kNone = 'N', kTrue = '\x88', kFalse = '\x89';
constexpr char kBinInt = 'J', kBinInt1 = 'K', kBinInt2 = 'M', kLong1 = '\x8a', kBinFloat = 'G';
constexpr char kBinUnicode = 'X', kEmptyDict = '}', kEmptyList = ']', kMark = '(', kSetItems = 'u';
constexpr char kAppends = 'e', kTuple = 't', kLongBinPut = 'r', kLongBinGet = 'j', kBinGet = 'h';

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

PickleWriter::PickleWriter() {
  out_.push_back(kProto);
  out_.push_back('\x02');
}

void PickleWriter::none() { out_.push_back(kNone); }
void PickleWriter::boolean(bool value) { out_.push_back(value ? kTrue : kFalse); }

void PickleWriter::integer(int64_t value) {
  if (value >= 0 && value < 256) {
    out_.push_back(kBinInt1);
    put_le(out_, static_cast<uint64_t>(value), 1);
  } else if (value >= 0 && value < 65536) {
    out_.push_back(kBinInt2);
    put_le(out_, static_cast<uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    out_.push_back(kBinInt);
    put_le(out_, static_cast<uint64_t>(static_cast<uint32_t>(static_cast<int32_t>(value))), 4);
  } else {
    // LONG1: little-endian two's complement, 8 bytes (always enough for int64).
    out_.push_back(kLong1);
    out_.push_back('\x08');
    put_le(out_, static_cast<uint64_t>(value), 8);
  }
}

void PickleWriter::unsigned_integer(uint64_t value) {
  if (value <= static_cast<uint64_t>(INT64_MAX)) return integer(static_cast<int64_t>(value));
  out_.push_back(kLong1);  // 9 bytes: the top byte 0 keeps it positive
  out_.push_back('\x09');
  put_le(out_, value, 8);
  out_.push_back('\0');
}

void PickleWriter::real(double value) {
  out_.push_back(kBinFloat);
  const uint64_t bits = std::bit_cast<uint64_t>(value);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));  // big-endian
}

void PickleWriter::text(std::string_view utf8) {
  out_.push_back(kBinUnicode);
  put_le(out_, utf8.size(), 4);
  out_.append(utf8);
}

void PickleWriter::name(std::string_view utf8) {
  const auto it = names_.find(std::string(utf8));
  if (it != names_.end()) return recall(it->second);
  text(utf8);
  names_.emplace(std::string(utf8), remember());
}

void PickleWriter::begin_dict() {
  out_.push_back(kEmptyDict);
  out_.push_back(kMark);
}
void PickleWriter::end_dict() { out_.push_back(kSetItems); }
void PickleWriter::begin_list() {
  out_.push_back(kEmptyList);
  out_.push_back(kMark);
}
void PickleWriter::end_list() { out_.push_back(kAppends); }
void PickleWriter::begin_tuple() { out_.push_back(kMark); }
void PickleWriter::end_tuple() { out_.push_back(kTuple); }

uint32_t PickleWriter::remember() {
  out_.push_back(kLongBinPut);
  put_le(out_, next_slot_, 4);
  return next_slot_++;
}

void PickleWriter::recall(uint32_t slot) {
  if (slot < 256) {
    out_.push_back(kBinGet);
    put_le(out_, slot, 1);
    return;
  }
  out_.push_back(kLongBinGet);
  put_le(out_, slot, 4);
}

std::string PickleWriter::finish() {
  out_.push_back(kStop);
  return std::move(out_);
}

}  // namespace memreplay::results
