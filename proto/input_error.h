// InputError lives in base/input_error.h (the ground floor: base/ writes files too); this name
// stays for the code above proto/.
#pragma once

#include "base/input_error.h"
