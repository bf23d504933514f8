// GPU test: tk::gemm_tile with T = float (SIMT fp32 path, no TF32).
// What is checked: see gemm_test_impl.cuh.
#include "gemm_test_impl.cuh"

// Plain fp32 FMA chain in k order: typical error ~sqrt(K) * 2^-24 of
// sum |ab|; 2e-5 leaves room for the worst case at K = 512 while a TF32
// (10-bit mantissa) result would be off by ~1e-3.
int main() { return gemmtest::run_all<float>("f32", 2e-5); }
