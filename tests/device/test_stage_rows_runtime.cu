// GPU test: test_stage_rows.cu's checks with the staging loops' thread count read
// at run time (TK_STAGE_RUNTIME_THREADS: the form before perf-log step 112).
#define TK_STAGE_RUNTIME_THREADS
#include "test_stage_rows.cu"
