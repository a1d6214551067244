#include "recorder/import/trace_sink.h"
