// The unpickler reading its input (unpickler.h): more bytes of a growing input, protocol-0 text
// arguments, integers, and the errors that name the byte offset.
#include "recorder/import/unpickler/unpickler.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "proto/input_error.h"

namespace memreplay::pickle {

void Unpickler::fail(uint64_t at, const std::string& what) const { throw InputError::at_byte(file_, at, what); }

void Unpickler::fail_here(const std::string& what) const { fail(op_pos_, op_label(op_) + ": " + what); }

void Unpickler::fail_here(const char* what) const { fail_here(std::string(what)); }

void Unpickler::fail_truncated(uint64_t needed) const {
  fail_here("pickle truncated: needs " + std::to_string(needed) + " more bytes, " +
            std::to_string(data_.size() - pos_) + " left");
}

bool Unpickler::more(uint64_t n) {
  if (growing_ == nullptr) return false;
  const uint64_t want = n > UINT64_MAX - pos_ ? UINT64_MAX : pos_ + n;
  const uint64_t have = growing_->wait_for(want);
  // At most kGrowingWindow past what is needed: the next call, and with it the news of a
  // decoder that failed (a bomb past its ceiling), is never more than that far away.
  const uint64_t seen = have < want ? have : std::min(have, want + kGrowingWindow);
  data_ = std::string_view(growing_->data(), static_cast<size_t>(seen));
  tree_.data_ = data_;
  if (have < want) growing_ = nullptr;  // complete
  return have >= want;
}

std::string_view Unpickler::read_line() {
  size_t nl = data_.find('\n', pos_);
  while (nl == std::string_view::npos) {
    const size_t searched = data_.size();
    if (!more(searched - pos_ + 1)) fail_here("pickle truncated: argument has no end of line");
    nl = data_.find('\n', searched);
  }
  std::string_view line = data_.substr(pos_, nl - pos_);
  pos_ = nl + 1;
  return line;
}

int64_t Unpickler::parse_decimal(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec == std::errc::result_out_of_range) fail_here("integer does not fit in 64 bits");
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    fail_here("malformed decimal argument '" + std::string(text.substr(0, 40)) + "'");
  return v;
}

uint64_t Unpickler::read_text_memo_index() {
  const int64_t index = parse_decimal(read_line());
  if (index < 0) fail_here("negative memo index");
  return static_cast<uint64_t>(index);
}

void Unpickler::check_long_sign_extension(const char* bytes, uint64_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes);
  const bool negative = (p[n - 1] & 0x80) != 0;
  bool fits = ((p[7] & 0x80) != 0) == negative;
  for (uint64_t i = 8; i < n && fits; ++i) fits = p[i] == (negative ? 0xff : 0x00);
  if (!fits) fail_here("integer of " + std::to_string(n) + " bytes does not fit in 64 bits");
}

}  // namespace memreplay::pickle
