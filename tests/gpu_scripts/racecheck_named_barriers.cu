// A correct program in the shape of the megakernel's gemm-then-reduction
// phase: warpgroups 1 and 2 sync among themselves on named barriers (as the
// wgmma row epilogue does) while warpgroup 0 (the producer) does not; then
// every thread writes shared memory, __syncthreads(), and warp 0 reads what
// the others wrote. `named` = 0 leaves the named barriers out (control).
// tests/test_sanitizer_cuda.py runs it under racecheck: the question is whether
// racecheck's model of barrier 0 accounts for named barriers executed by only
// part of the block.
#include <cstdio>
#include <cstdlib>

__global__ void phase(float* out, int named) {
  __shared__ float part[384];
  const int wg = threadIdx.x / 128;
  if (named && wg == 1) {
    asm volatile("bar.sync 3, 128;" ::: "memory");
    asm volatile("bar.sync 3, 128;" ::: "memory");
  } else if (named && wg == 2) {
    asm volatile("bar.sync 4, 128;" ::: "memory");
    asm volatile("bar.sync 4, 128;" ::: "memory");
  }
  part[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  if (threadIdx.x < 32) {
    float a = 0.0f;
    for (int s = 0; s < 12; ++s) a += part[s * 32 + threadIdx.x];
    out[threadIdx.x] = a;
  }
  __syncthreads();
}

int main(int argc, char** argv) {
  const int named = argc > 1 ? atoi(argv[1]) : 1;
  float* out;
  cudaMalloc(&out, 32 * sizeof(float));
  phase<<<1, 384>>>(out, named);
  float h[32];
  cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
  // sum over s of (s * 32 + t) = 32 * 66 + 12 t
  for (int t = 0; t < 32; ++t)
    if (h[t] != 32.0f * 66.0f + 12.0f * t) { printf("wrong at %d: %f\n", t, h[t]); return 1; }
  printf("named=%d ok\n", named);
  return 0;
}
