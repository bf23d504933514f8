// GPU test: tk::gemm_tile with T = __nv_bfloat16 (tensor-core mma.sync path).
// What is checked: see gemm_test_impl.cuh.
#include "gemm_test_impl.cuh"

// fp32 accumulation of exact bf16 products: worst case about K * 2^-23 of
// sum_k |a_ik b_kj| (6e-5 at K = 512); an indexing bug gives O(1).
int main() { return gemmtest::run_all<__nv_bfloat16>("bf16", 1e-4); }
