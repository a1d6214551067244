// What an unpickle made, as text, for tests and fuzzers that compare two ways of unpickling the
// same bytes (pickle::UnpickleOptions::one_pass_dicts on and off): the error, or every value
// reached from the root and every item streamed to the DeviceTraceSink, with its kind, identity
// (container index or scalar offset), size, shape and contents. Equal texts: the same trees, to a
// depth of 4 and kMaxVisits values a walk (a tree may hold cycles and shared subtrees).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "proto/input_error.h"
#include "recorder/import/unpickler/pickle_reader.h"

namespace memreplay::testing {

class PickleTreeSignature {
 public:
  static constexpr uint64_t kMaxVisits = 10'000;
  static constexpr uint64_t kMaxTotalVisits = 1'000'000;  // all walks of one unpickle

  // `streaming`: the device traces go to a sink that writes down what it is given.
  static std::string of(std::string_view bytes, bool one_pass_dicts, bool streaming) {
    PickleTreeSignature signature;
    Sink sink(signature);
    pickle::UnpickleOptions options;
    options.one_pass_dicts = one_pass_dicts;
    if (streaming) options.device_traces = &sink;
    try {
      const pickle::Tree tree = pickle::unpickle(bytes, "t.pkl", options);
      signature.text_ += "root ";
      signature.visits_ = 0;
      signature.walk(tree.root(), 4);
    } catch (const InputError& e) {
      signature.text_ += std::string("error ") + e.what();
    }
    return signature.text_;
  }

 public:
  // Writes down in `s` what it is given.
  class Sink final : public pickle::DeviceTraceSink {
   public:
    explicit Sink(PickleTreeSignature& s) : s_(s) {}
    void take(uint32_t list_index, const pickle::Tree& tree, std::span<const pickle::Ref> items) override {
      s_.text_ += "take " + std::to_string(list_index) + ": ";
      s_.visits_ = 0;
      for (const pickle::Ref ref : items) s_.walk(pickle::Value(&tree, ref), 2);
      s_.text_ += '\n';
    }

   private:
    PickleTreeSignature& s_;
  };

 private:
  void walk(pickle::Value v, int depth) {
    using pickle::Kind;
    if (++visits_ > kMaxVisits || ++total_visits_ > kMaxTotalVisits) return;
    text_ += std::to_string(static_cast<int>(v.kind())) + '#' + std::to_string(v.id()) + '@' +
             std::to_string(v.offset()) + '/' + std::to_string(v.size()) + 's' + std::to_string(v.shape_id());
    if (v.is(Kind::str) || v.is(Kind::bytes)) text_ += '"' + std::string(v.as_str()) + '"';
    if (v.is(Kind::integer) || v.is(Kind::boolean)) text_ += '=' + std::to_string(v.as_int());
    text_ += ' ';
    if (depth == 0) return;
    text_ += '(';
    if (v.is(Kind::dict)) {
      for (auto [k, item] : v.pairs()) {
        if (visits_ > kMaxVisits) break;
        walk(k, depth - 1), walk(item, depth - 1);
      }
    } else {
      for (auto item : v.items()) {
        if (visits_ > kMaxVisits) break;
        walk(item, depth - 1);
      }
    }
    text_ += ") ";
  }

  std::string text_;
  uint64_t visits_ = 0, total_visits_ = 0;
};

}  // namespace memreplay::testing
