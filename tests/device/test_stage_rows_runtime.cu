// GPU test: test_stage_rows.cu's checks with the staging loops' thread count read
// at run time (no TK_BLOCK_THREADS: the default, target.stage_constant_threads off).
#define TK_STAGE_TEST_RUNTIME_THREADS
#include "test_stage_rows.cu"
