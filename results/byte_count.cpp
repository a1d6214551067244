#include "results/byte_count.h"

#include <cctype>

#include "policies/detail/policy_options.h"
#include "proto/input_error.h"
#include "results/units.h"

namespace memreplay::results {

uint64_t parse_bytes(std::string_view text, std::string_view option, std::string* warning) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, wrongly) of "'" + std::string(text).
  std::string shown = "'";
  shown.append(text).append("'");
  const auto refuse = [&](const std::string& why) {
    return InputError(std::string(option) + " " + shown + ": " + why + ", e.g. 40GiB, 7.5GiB, 512MiB or 80GB (units " +
                      detail::kByteUnits + ")");
  };
  bool has_unit = false;
  for (const char c : text) has_unit = has_unit || std::isalpha(static_cast<unsigned char>(c));
  if (!has_unit && text.find('.') != std::string_view::npos)
    throw refuse("a fraction needs a unit (7.5 bytes is not a size)");
  const auto bytes = detail::parse_byte_size(text);  // the policies' option parser reads bytes the same way
  if (!bytes || *bytes == 0) throw refuse("expected bytes with a unit");
  if (!has_unit && warning != nullptr) {
    warning->assign(option).append(" ").append(text);
    warning->append(" has no unit: read as " + std::to_string(*bytes) + " bytes (" + format_bytes(*bytes) + ")");
  }
  return *bytes;
}

}  // namespace memreplay::results
