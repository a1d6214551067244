// Whether this test binary runs under AddressSanitizer, with gcc (__SANITIZE_ADDRESS__) or clang
// (__has_feature): its shadow memory and slower code are no measure of the limits on resident memory
// and time that the Release build keeps.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define MEMREPLAY_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMREPLAY_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef MEMREPLAY_TEST_UNDER_ASAN
#define MEMREPLAY_TEST_UNDER_ASAN 0
#endif
