#include "proto/trace_sink.h"
