// tk/tk.cuh -- umbrella header of the TrainKernel device library.
//
// Generated megakernels include only this file:  #include "tk/tk.cuh"
// (compile with -I <package>/backend/include, -std=c++17, -arch=sm_90; no -rdc
// needed). Header-only, namespace tk, depends only on the CUDA toolkit.
//
//   types.cuh      to_float / from_float<T> (RNE, as PyTorch), Vec<T,N> loads
//   grid.cuh       grid_sync() (cooperative launch), block_sync()
//   reduce.cuh     deterministic warp / block / two-level grid reductions
//   epilogue.cuh   staged_epilogue(load, store): a chunk's loads before its stores
//   gemm.cuh       gemm_tile<T,BM,BN,BK,TA,TB>(...): mma.sync (bf16/f16) or
//                  SIMT fp32 block tile with a per-element epilogue functor
//   pointwise.cuh  for_each_index(n, f): grid-stride loops
#pragma once

#include "types.cuh"
#include "grid.cuh"
#include "reduce.cuh"
#include "gemm.cuh"
#include "pointwise.cuh"
