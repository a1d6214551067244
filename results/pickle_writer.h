// Writes Python pickles (protocol 2) of plain data: dicts, lists, tuples, str, int, float, bool,
// None, with a memo so one object (a stack's frame list) can be written once and referenced
// again. The reading side of the same opcodes is recorder/import/pickle_reader.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace memreplay::results {

class PickleWriter {
 public:
  PickleWriter();  // PROTO 2

  void none();
  void boolean(bool value);
  void integer(int64_t value);
  void unsigned_integer(uint64_t value);
  void real(double value);
  void text(std::string_view utf8);
  // A string written many times (a dict key, an action name): the first time as text, then from
  // the memo, as Python's own pickler shares them.
  void name(std::string_view utf8);
  // Containers: begin, the items (a dict: key, value, key, value...), end.
  void begin_dict();
  void end_dict();
  void begin_list();
  void end_list();
  void begin_tuple();
  void end_tuple();
  // Stores the object just written in the memo and returns its slot; `recall` writes it again.
  uint32_t remember();
  void recall(uint32_t slot);

  // The finished pickle (STOP appended).
  std::string finish();

 private:
  std::string out_;
  uint32_t next_slot_ = 0;
  std::unordered_map<std::string, uint32_t> names_;
};

}  // namespace memreplay::results
