#include "recorder/trace_sink.h"
