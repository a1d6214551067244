#include "results/byte_count.h"

#include "base/units.h"
#include "proto/input_error.h"

namespace memreplay::results {

uint64_t parse_bytes(std::string_view text, std::string_view option, std::string* warning) {
  const ByteSizeInput input = parse_byte_input(text);
  if (!input.bytes) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict, wrongly) of "'" + std::string(text).
    std::string message(option);
    message.append(" '").append(text).append("': ").append(input.error);
    throw InputError(message);
  }
  if (input.unitless && warning != nullptr) {
    warning->assign(option).append(" ").append(text);
    warning->append(" has no unit: read as " + std::to_string(*input.bytes) + " bytes (" + format_bytes(*input.bytes) +
                    ")");
  }
  return *input.bytes;
}

}  // namespace memreplay::results
