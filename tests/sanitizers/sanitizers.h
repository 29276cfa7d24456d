// Which sanitizer a test is built with, whatever the compiler: gcc defines __SANITIZE_ADDRESS__
// and __SANITIZE_THREAD__, clang 14 only answers __has_feature. For the cases a sanitizer's
// runtime makes meaningless (a quarantine keeps freed memory resident; TSan cannot follow a
// fork), which skip saying why.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define DTLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DTLAB_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define DTLAB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DTLAB_TSAN 1
#endif
#endif
