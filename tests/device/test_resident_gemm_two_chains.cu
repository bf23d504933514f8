// GPU test: test_resident_gemm.cu's checks with TK_RESIDENT_TWO_CHAINS (tk::smem_gemm's
// odd k steps into a second accumulator set, perf-log step 110): the fast and the
// scalar paths must still give the same bits (the same parity on both), every
// compile-time form too, each element stored once, within the fp32 bound.
#define TK_RESIDENT_TWO_CHAINS
#include "test_resident_gemm.cu"
