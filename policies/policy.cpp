// The contract errors of Policy's public entry (policy.h), kept out of line: they are cold.
#include "policies/policy.h"

#include <cstdio>

namespace memreplay {

void Policy::unknown_free(uint64_t address) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(address));
  throw PolicyContractError(std::string("free of ") + hex +
                            ", which this policy did not hand out (or took back already)");
}

}  // namespace memreplay
