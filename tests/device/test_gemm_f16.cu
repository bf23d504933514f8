// GPU test: tk::gemm_tile with T = __half (tensor-core mma.sync path).
// What is checked: see gemm_test_impl.cuh.
#include "gemm_test_impl.cuh"

// Same bound as bf16: products of two halves are exact in fp32.
int main() { return gemmtest::run_all<__half>("f16", 1e-4); }
