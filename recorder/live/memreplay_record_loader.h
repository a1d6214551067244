// libmemreplay_record.so loaded at run time: its C API (memreplay_record.h) found with dlsym, and
// the trace format it writes checked against this header's copy, so that a program built against
// one memreplay and handed the library of another fails at once with a clear message instead of
// writing wrong event kinds. For programs that must not link the library: the PyTorch tracker
// (python/memreplay/torch/), record_bench (which measures the call exactly as the tracker makes it).
// Header-only C++, so that the tracker, compiled by torch against the user's torch, needs nothing
// else of ours.
#ifndef MEMREPLAY_RECORD_LOADER_H
#define MEMREPLAY_RECORD_LOADER_H

#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "memreplay_record.h"

struct memreplay_record_library {
  // memreplay_record.h's kinds by their names in proto/event.h (tests/torch_package_test.cpp holds
  // the names against it).
  struct NamedKind {
    const char* name;
    int number;
  };
  static constexpr NamedKind kinds[] = {
      {"alloc", MEMREPLAY_ALLOC},
      {"free_requested", MEMREPLAY_FREE_REQUESTED},
      {"free_completed", MEMREPLAY_FREE_COMPLETED},
      {"segment_alloc", MEMREPLAY_SEGMENT_ALLOC},
      {"segment_free", MEMREPLAY_SEGMENT_FREE},
      {"segment_map", MEMREPLAY_SEGMENT_MAP},
      {"segment_unmap", MEMREPLAY_SEGMENT_UNMAP},
      {"snapshot", MEMREPLAY_SNAPSHOT},
      {"oom", MEMREPLAY_OOM},
      {"empty_cache", MEMREPLAY_EMPTY_CACHE},
      {"annotation", MEMREPLAY_ANNOTATION},
      {"stream_create", MEMREPLAY_STREAM_CREATE},
      {"stream_destroy", MEMREPLAY_STREAM_DESTROY},
      {"event_record", MEMREPLAY_EVENT_RECORD},
      {"stream_wait_event", MEMREPLAY_STREAM_WAIT_EVENT},
      {"synchronize", MEMREPLAY_SYNCHRONIZE},
      {"address_reserve", MEMREPLAY_ADDRESS_RESERVE},
      {"address_free", MEMREPLAY_ADDRESS_FREE},
      {"physical_alloc", MEMREPLAY_PHYSICAL_ALLOC},
      {"physical_free", MEMREPLAY_PHYSICAL_FREE},
  };
  static_assert(sizeof kinds / sizeof kinds[0] == MEMREPLAY_KIND_COUNT - 1, "a kind of memreplay_record.h is missing");

  decltype(&memreplay_open) open = nullptr;
  decltype(&memreplay_record) record = nullptr;
  decltype(&memreplay_record_in_pool) record_in_pool = nullptr;
  decltype(&memreplay_annotate) annotate = nullptr;
  decltype(&memreplay_set_resolver) set_resolver = nullptr;
  decltype(&memreplay_flush) flush = nullptr;
  decltype(&memreplay_close) close = nullptr;
  decltype(&memreplay_get_stats) get_stats = nullptr;
  decltype(&memreplay_destroy) destroy = nullptr;
  decltype(&memreplay_format_version) format_version = nullptr;
  decltype(&memreplay_event_kind) event_kind = nullptr;

  // Loads the library at path; "" when every function is there and the library writes the format
  // of this header, else what is wrong (the object is then unusable).
  std::string load(const std::string& path) {
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) return "cannot load " + path + ": " + dlerror();
    std::string error = check(library, path);
    if (!error.empty()) {
      *this = {};
      dlclose(library);
    }
    return error;
  }

 private:
  std::string check(void* library, const std::string& path) {
    std::string missing;
    const auto find = [&](auto& function, const char* name) {
      function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(dlsym(library, name));
      if (function == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
    find(open, "memreplay_open");
    find(record, "memreplay_record");
    find(record_in_pool, "memreplay_record_in_pool");
    find(annotate, "memreplay_annotate");
    find(set_resolver, "memreplay_set_resolver");
    find(flush, "memreplay_flush");
    find(close, "memreplay_close");
    find(get_stats, "memreplay_get_stats");
    find(destroy, "memreplay_destroy");
    find(format_version, "memreplay_format_version");
    find(event_kind, "memreplay_event_kind");
    if (!missing.empty()) return path + " lacks " + missing + " (a library of another memreplay version?)";
    uint32_t minor = 0;
    const uint32_t major = format_version(&minor);
    if (major != MEMREPLAY_FORMAT_MAJOR)
      return path + " writes trace format " + std::to_string(major) + "." + std::to_string(minor) +
             ", but this program was built for format " + std::to_string(MEMREPLAY_FORMAT_MAJOR) +
             ": rebuild it against that library's memreplay_record.h";
    for (const auto& [name, number] : kinds)
      if (event_kind(name) != static_cast<uint32_t>(number))
        return path + " numbers event kind " + name + " " + std::to_string(event_kind(name)) + ", this program " +
               std::to_string(number) + ": rebuild it against that library's memreplay_record.h";
    return "";
  }
};

#endif  // MEMREPLAY_RECORD_LOADER_H
