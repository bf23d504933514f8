"""A stand-in for `trainkernel.frontend.capture` and `trainkernel.pipeline` in tests.

It returns the pipeline's own types (a real `Captured` of a stand-in module,
`Lowered`, `KernelMeta`, `BufferSpec`) and follows the launcher ABI (the
`tk_launch` / `tk_max_active_blocks_per_sm` exports) with a kernel whose
effect is easy to predict, so the build, the launcher and the API plumbing
are tested independently of the real lowering:

* every state leaf's new value is ``old + 1`` (written in place when
  ``inplace=True``, into a fresh output buffer otherwise);
* every other result (loss, grads) is filled with ``position + 1`` where
  position is its index in the launcher's buffer list;
* the arena is zeroed (so sanitizers see it used);
* the two halves are separated by a grid barrier (a real cooperative launch).

`install(monkeypatch)` puts both fake modules in `sys.modules`.
"""

from __future__ import annotations

import sys
import types

import torch
import torch.utils._pytree as pytree
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, Region

from trainkernel import elements
from trainkernel.dialects import tk
from trainkernel.frontend.capture import Captured
from trainkernel.pipeline import STAGES, BufferSpec, KernelMeta, Lowered
from trainkernel.util import numel

CALLS = {"capture": 0, "lower": 0}


def _tensor_type(t: torch.Tensor) -> TensorType:
    return TensorType(elements.from_torch(t.dtype).ir, list(t.shape))


def capture(step, example_args) -> Captured:
    """A real `Captured` of a stand-in module: one func.func with the step's flat
    argument and result types whose results are fills (what the fake kernel
    computes is described in the module docstring, not in this IR)."""
    CALLS["capture"] += 1
    args = tuple(example_args)
    for leaf in pytree.tree_leaves(args):
        assert leaf.device.type == "meta", "the API must trace on meta tensors"
    out = step(*args)
    flat_in, in_spec = pytree.tree_flatten(args)
    flat_out, out_spec = pytree.tree_flatten(out)
    in_types, out_types = [_tensor_type(t) for t in flat_in], [_tensor_type(t) for t in flat_out]
    block = Block(arg_types=in_types)
    fills = [tk.FillOp(0.0, t) for t in out_types]
    block.add_ops([*fills, func.ReturnOp(*fills)])
    names = lambda prefix, n: ArrayAttr([DictionaryAttr({"tk.name": StringAttr(f"{prefix}{i}")}) for i in range(n)])  # noqa: E731
    f = func.FuncOp("fake_step", (in_types, out_types), Region(block),
                    arg_attrs=names("in", len(flat_in)), res_attrs=names("out", len(flat_out)))
    module = ModuleOp([f])
    module.verify()
    return Captured(
        module=module,
        step=step,
        in_spec=in_spec,
        out_spec=out_spec,
        arg_names=tuple(f"in{i}" for i in range(len(flat_in))),
        result_names=tuple(f"out{i}" for i in range(len(flat_out))),
    )


def _flat_types(captured: Captured, results: bool) -> list[tuple[tuple[int, ...], torch.dtype]]:
    types_ = captured.func.function_type.outputs.data if results else captured.func.function_type.inputs.data
    return [(tuple(t.get_shape()), elements.torch_dtype(t)) for t in types_]


def lower(captured: Captured, inplace: bool = True, grid: int = 0, resident: str = "auto", target: str | None = None,
          engine: str = "auto") -> Lowered:
    CALLS["lower"] += 1
    in_meta, out_meta = _flat_types(captured, False), _flat_types(captured, True)
    tree = pytree.tree_unflatten(list(range(len(out_meta))), captured.out_spec)
    new_state = pytree.tree_leaves(tree[2]) if isinstance(tree, (tuple, list)) and len(tree) == 3 else []
    state_of = {k: i for i, k in enumerate(new_state)}  # result index -> flat input index

    buffers = [BufferSpec("input", i, shape, dtype) for i, (shape, dtype) in enumerate(in_meta)]
    results = []
    for k, (shape, dtype) in enumerate(out_meta):
        if inplace and k in state_of:
            results.append(("buffer", state_of[k]))
        else:
            buffers.append(BufferSpec("output", k, shape, dtype))
            results.append(("buffer", len(buffers) - 1))

    arena_bytes = 4096
    block = 128
    body_state, body_rest = [], []
    for k, (_, pos) in enumerate(results):
        b = buffers[pos]
        t = elements.from_torch(b.dtype).c_type
        n = numel(b.shape)
        p = f"(({t}*)a.b[{pos}])"
        if k in state_of:
            src = f"(({t}*)a.b[{state_of[k]}])"
            body_state.append(f"  for (long i = tid; i < {n}L; i += nthreads) {p}[i] = from_f<{t}>(to_f({src}[i]) + 1.0f);")
        else:
            body_rest.append(f"  for (long i = tid; i < {n}L; i += nthreads) {p}[i] = from_f<{t}>({pos + 1}.0f);")
    nb = max(1, len(buffers))
    source = f"""// fake TrainKernel megakernel (tests/_fake_pipeline.py)
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>

__device__ __forceinline__ float to_f(float x) {{ return x; }}
__device__ __forceinline__ float to_f(__nv_bfloat16 x) {{ return __bfloat162float(x); }}
__device__ __forceinline__ float to_f(__half x) {{ return __half2float(x); }}
template <class T> __device__ __forceinline__ T from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) {{ return x; }}
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {{ return __float2bfloat16_rn(x); }}
template <> __device__ __forceinline__ __half from_f<__half>(float x) {{ return __float2half_rn(x); }}

struct Args {{ void* b[{nb}]; }};

__global__ void __launch_bounds__({block}) tk_fake_kernel(Args a, unsigned char* arena) {{
  const long tid = (long)blockIdx.x * blockDim.x + threadIdx.x;
  const long nthreads = (long)gridDim.x * blockDim.x;
  for (long i = tid; i < {arena_bytes}L; i += nthreads) arena[i] = 0;
{chr(10).join(body_rest)}
  cooperative_groups::this_grid().sync();
{chr(10).join(body_state)}
}}

extern "C" int tk_launch(void** buffers, void* arena, int grid, void* stream) {{
  Args a;
  for (int i = 0; i < {len(buffers)}; ++i) a.b[i] = buffers[i];
  unsigned char* ar = (unsigned char*)arena;
  void* params[] = {{&a, &ar}};
  return (int)cudaLaunchCooperativeKernel((const void*)tk_fake_kernel, dim3(grid), dim3({block}), params, 0,
                                          (cudaStream_t)stream);
}}

extern "C" int tk_max_active_blocks_per_sm() {{
  int n = 0;
  cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, tk_fake_kernel, {block}, 0);
  return e == cudaSuccess ? n : -(int)e;
}}
"""
    meta = KernelMeta(buffers=buffers, results=results, arena_bytes=arena_bytes, grid=1000, block=block,
                      smem_bytes=0, inplace=inplace, phases=2, grid_barriers=1)
    stages = {
        "tk": "func.func @step() {\n  // fake tk\n}",
        "sched": "sched.program {\n  sched.phase {}\n  sched.barrier\n  sched.phase {}\n}",
        "tile": "tile.kernel {\n  // fake tile\n}",
    }
    return Lowered(stages=stages, cuda_source=source, kernel_name="tk_fake_kernel", pass_seconds=0.001, meta=meta,
                   pipeline="(fake: no passes)")


def install(monkeypatch) -> None:
    """Replace capture and lower by the fakes for the duration of a test."""
    cap = types.ModuleType("trainkernel.frontend.capture")
    cap.capture = capture
    pipe = types.ModuleType("trainkernel.pipeline")
    pipe.lower = lower
    pipe.STAGES = STAGES  # the API names its dumps by the real stage list
    monkeypatch.setitem(sys.modules, "trainkernel.frontend.capture", cap)
    monkeypatch.setitem(sys.modules, "trainkernel.pipeline", pipe)


# ----------------------------------------------------------------------------- a step to compile


def mlp_step(lr: float = 0.05, compute_dtype: torch.dtype = torch.bfloat16):
    """A small pure SGD step ``(params, x, y) -> (loss, grads, new_params)``."""

    def loss_fn(params, x, y):
        w1, b1, w2, b2 = params
        h = torch.relu(x.to(compute_dtype) @ w1.to(compute_dtype) + b1.to(compute_dtype))
        out = (h @ w2.to(compute_dtype) + b2.to(compute_dtype)).float()
        return ((out - y.float()) ** 2).mean()

    def step(params, x, y):
        grads, loss = torch.func.grad_and_value(loss_fn)(params, x, y)
        return loss, grads, tuple(p - lr * g for p, g in zip(params, grads))

    return step


def mlp_args(B=16, I=32, H=64, O=8, device="cpu", dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    params = (
        torch.randn(I, H, generator=g) * 0.1,
        torch.randn(H, generator=g) * 0.1,
        torch.randn(H, O, generator=g) * 0.1,
        torch.randn(O, generator=g) * 0.1,
    )
    x = torch.randn(B, I, generator=g).to(dtype)
    y = torch.randn(B, O, generator=g).to(dtype)
    return tuple(p.to(device) for p in params), x.to(device), y.to(device)
