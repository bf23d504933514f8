// Shared helpers for the device-library test programs (tests/device/*.cu).
//
// Protocol: stdout carries only "PASS <name>" / "FAIL <name> <why>" lines;
// diagnostics go to stderr; the program exits non-zero if anything failed.
#pragma once

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define TK_CUDA_CHECK(expr)                                                             \
  do {                                                                                  \
    cudaError_t err_ = (expr);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      printf("FAIL cuda_error %s at %s:%d: %s\n", #expr, __FILE__, __LINE__,            \
             cudaGetErrorString(err_));                                                 \
      fflush(stdout);                                                                   \
      exit(2);                                                                          \
    }                                                                                   \
  } while (0)

namespace tktest {

inline int& failures() {
  static int n = 0;
  return n;
}

inline void report(bool ok, const char* name, const char* fmt = nullptr, ...) {
  if (ok) {
    printf("PASS %s\n", name);
  } else {
    ++failures();
    printf("FAIL %s", name);
    if (fmt) {
      printf(" ");
      va_list ap;
      va_start(ap, fmt);
      vprintf(fmt, ap);
      va_end(ap);
    }
    printf("\n");
  }
  fflush(stdout);
}

inline int finish() { return failures() == 0 ? 0 : 1; }

// Deterministic host RNG (SplitMix64) so failures reproduce.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // uniform in [-1, 1)
  float uniform() { return (float)((next() >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }
};

// Skip (exit 0 with no lines is not allowed by the harness) -> report why.
inline bool have_gpu() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) return false;
  return true;
}

}  // namespace tktest
