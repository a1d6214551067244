#include "recorder/import/rmm/rmm_log_importer.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <vector>

#include "proto/input_error.h"
#include "recorder/import/input/decompress.h"

namespace memreplay {
namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;
constexpr uint64_t kNsPerDay = 86'400 * kNsPerSecond;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> fields;
  for (;;) {
    const size_t comma = line.find(',');
    fields.push_back(trim(line.substr(0, comma)));
    if (comma == std::string_view::npos) return fields;
    line.remove_prefix(comma + 1);
  }
}

enum Column { kThread, kTime, kAction, kPointer, kSize, kStream, kColumnCount };
constexpr std::array<std::string_view, kColumnCount> kColumnNames = {"Thread",  "Time", "Action",
                                                                     "Pointer", "Size", "Stream"};

// Where each known column is in a row; nullopt when the header lacks it.
using ColumnIndex = std::array<std::optional<size_t>, kColumnCount>;

ColumnIndex parse_header(std::string_view line) {
  if (line.size() >= 3 && line.substr(0, 3) == "\xef\xbb\xbf") line.remove_prefix(3);  // UTF-8 BOM
  ColumnIndex index;
  const auto names = split_commas(line);
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t c = 0; c < kColumnCount; ++c)
      if (equals_ignoring_case(names[i], kColumnNames[c]) && !index[c]) index[c] = i;
  return index;
}

std::optional<uint64_t> parse_unsigned(std::string_view text, int base) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

bool has_hex_prefix(std::string_view s) { return s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'); }

std::optional<uint64_t> parse_pointer(std::string_view text) {
  if (text == "(nil)" || text == "0") return 0;
  if (has_hex_prefix(text)) text.remove_prefix(2);
  return parse_unsigned(text, 16);  // %p is hexadecimal even without a prefix
}

std::optional<uint64_t> parse_stream(std::string_view text) {
  if (text == "(nil)") return 0;
  if (has_hex_prefix(text)) return parse_unsigned(text.substr(2), 16);
  if (auto decimal = parse_unsigned(text, 10)) return decimal;
  return parse_unsigned(text, 16);
}

// Digits of a fraction of a second as nanoseconds: ".163838" → 163'838'000.
std::optional<uint64_t> parse_fraction_ns(std::string_view digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  auto v = parse_unsigned(digits, 10);
  if (!v) return std::nullopt;
  for (size_t i = digits.size(); i < 9; ++i) *v *= 10;
  return v;
}

// HH:MM:SS[.fraction] → nanoseconds since midnight, or a plain number of seconds.
std::optional<uint64_t> parse_time(std::string_view text) {
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  uint64_t fraction = 0;
  if (dot != std::string_view::npos) {
    auto f = parse_fraction_ns(text.substr(dot + 1));
    if (!f) return std::nullopt;
    fraction = *f;
  }
  if (whole.find(':') == std::string_view::npos) {
    auto seconds = parse_unsigned(whole, 10);
    if (!seconds || *seconds > UINT64_MAX / kNsPerSecond - 1) return std::nullopt;
    return *seconds * kNsPerSecond + fraction;
  }
  if (whole.size() != 8 || whole[2] != ':' || whole[5] != ':') return std::nullopt;
  const auto h = parse_unsigned(whole.substr(0, 2), 10);
  const auto m = parse_unsigned(whole.substr(3, 2), 10);
  const auto s = parse_unsigned(whole.substr(6, 2), 10);
  if (!h || !m || !s || *h > 23 || *m > 59 || *s > 60) return std::nullopt;
  return ((*h * 60 + *m) * 60 + *s) * kNsPerSecond + fraction;
}

class RmmLogReader {
 public:
  RmmLogReader(std::string_view csv, const std::string& file, TraceSink& sink) : csv_(csv), file_(file), sink_(sink) {}

  void run() {
    std::string_view line;
    if (!next_line(line)) {
      line_number_ = 1;
      fail({}, "empty file: expected an RMM log header 'Thread,Time,Action,Pointer,Size,Stream'");
    }
    columns_ = parse_header(line);
    header_width_ = split_commas(line).size();
    if (!columns_[kAction] || !columns_[kPointer] || !columns_[kSize])
      fail({},
           "not an RMM log header (needs Action, Pointer and Size columns): '" + std::string(line.substr(0, 80)) + "'");

    proto::TraceHeader header;
    header.set_source("rmm-log");
    header.set_source_file(file_);
    header.add_devices()->set_index(0);
    sink_.begin(header);
    while (next_line(line))
      if (!trim(line).empty()) read_row(line);
    sink_.finish();
  }

 private:
  // Errors name the line and the byte offset in the (decompressed) log of the text at fault:
  // `at` is a piece of the current line, or empty for the line as a whole.
  [[noreturn]] void fail(std::string_view at, const std::string& what) const {
    const bool inside = at.data() >= csv_.data() && at.data() <= csv_.data() + csv_.size();
    const auto offset = static_cast<uint64_t>(inside ? at.data() - csv_.data() : line_start_);
    throw InputError(file_ + ": line " + std::to_string(line_number_) + ", byte " + std::to_string(offset) + ": " +
                     what);
  }

  bool next_line(std::string_view& line) {
    if (pos_ >= csv_.size()) return false;
    const size_t nl = csv_.find('\n', pos_);
    const size_t end = nl == std::string_view::npos ? csv_.size() : nl;
    line = csv_.substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line_start_ = pos_;
    pos_ = end + 1;
    ++line_number_;
    return true;
  }

  void read_row(std::string_view line) {
    const auto fields = split_commas(line);
    if (fields.size() != header_width_)
      fail({}, "expected " + std::to_string(header_width_) + " comma-separated fields, found " +
                   std::to_string(fields.size()));
    auto field = [&](Column c) { return columns_[c] ? fields[*columns_[c]] : std::string_view(); };

    Event e;
    const std::string_view action = field(kAction);
    if (action == "allocate")
      e.kind = EventKind::alloc;
    else if (action == "free")
      e.kind = EventKind::free_requested;
    else if (action == "allocate failure")
      e.kind = EventKind::oom, e.flags = kFailed;
    else
      fail(action,
           "unknown action '" + std::string(action.substr(0, 40)) + "' (expected allocate, free or allocate failure)");

    const auto pointer = parse_pointer(field(kPointer));
    if (!pointer) fail(field(kPointer), "bad pointer '" + std::string(field(kPointer).substr(0, 40)) + "'");
    const auto size = parse_unsigned(field(kSize), 10);
    if (!size) fail(field(kSize), "bad size '" + std::string(field(kSize).substr(0, 40)) + "'");
    if (columns_[kStream]) {
      const auto stream = parse_stream(field(kStream));
      if (!stream) fail(field(kStream), "bad stream '" + std::string(field(kStream).substr(0, 40)) + "'");
      e.stream = *stream;
    }
    if (columns_[kTime]) e.time_ns = wall_time(field(kTime));
    e.size = *size;
    if (e.kind != EventKind::oom) e.address = *pointer;  // a failure logs a null pointer

    sink_.append(e);
    if (e.kind == EventKind::free_requested) {
      e.kind = EventKind::free_completed;
      sink_.append(e);
    }
  }

  // Time of day → a time that keeps rising across midnight.
  uint64_t wall_time(std::string_view text) {
    const auto t = parse_time(text);
    if (!t) fail(text, "bad time '" + std::string(text.substr(0, 40)) + "' (expected HH:MM:SS.ffffff or seconds)");
    uint64_t time = *t + day_offset_;
    if (time + kNsPerDay / 2 < last_time_) {  // the clock went back by more than 12 h: a new day
      day_offset_ += kNsPerDay;
      time += kNsPerDay;
    }
    last_time_ = time;
    return time;
  }

  std::string_view csv_;
  const std::string& file_;
  TraceSink& sink_;
  size_t pos_ = 0;
  uint64_t line_number_ = 0;
  size_t line_start_ = 0;  // byte offset of the current line
  ColumnIndex columns_;
  size_t header_width_ = 0;
  uint64_t day_offset_ = 0;
  uint64_t last_time_ = 0;
};

}  // namespace

bool is_rmm_log_header(std::string_view first_line) {
  const ColumnIndex c = parse_header(first_line);
  return c[kAction] && c[kPointer] && c[kSize];
}

void import_rmm_log_text(std::string_view csv, const std::string& source_file, TraceSink& sink) {
  RmmLogReader(csv, source_file, sink).run();
}

void import_rmm_log(const std::string& path, TraceSink& sink) {
  const std::string text = read_decompressed(path);
  import_rmm_log_text(text, path, sink);
}

}  // namespace memreplay
