"""`compile_training`: a training step -> one cooperative CUDA megakernel you can call.

    compiled = trainkernel.compile_training(step, (params, x, y))
    loss, grads, params = compiled(params, x, y)        # on a GPU (the step's own results)
    program = compiled.capture(params, x, y)            # CUDA Graph of one step
    program.replay()

The step is a pure function ``step(state, *batch) -> (..., new_state)``:

- ``state`` (the first argument) is any pytree of tensors: the parameters, and
  whatever else training carries from step to step (momentum buffers, Adam
  moments, a 0-d step counter);
- the step returns a tuple (or list) whose LAST element is the new state, with
  exactly the structure, shapes and dtypes of ``state``;
- everything before it is returned as computed, any pytree of tensors:
  ``(loss, new_state)``, ``(loss, grads, new_state)``,
  ``(loss, {"acc": acc}, new_state)`` are all fine.

Anything else is a ValueError showing the expected and the actual structure.

The example arguments may live on any device (cpu, meta, cuda): only their
shapes, dtypes and strides count, and they must be contiguous. Capturing,
lowering and nvcc all run without a GPU; only calling the step needs one.

With ``inplace=True`` (the default) the updated state is written into the
state tensors passed in: the returned ``new_state`` leaves ARE those tensors.
With ``inplace=False`` every result is a fresh tensor and the inputs are never
written.
"""

from __future__ import annotations

import importlib
import inspect
import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree
from xdsl.dialects import func

from trainkernel.backend.build import (BuildResult, build as _build, default_arch, normalize_arch, verify_library,
                                      wgmma_runs_on)
from trainkernel import elements, lowering_cache
from trainkernel.pipeline import STAGES
from trainkernel.target import DEFAULT as DEFAULT_TARGET

__all__ = ["CapturedProgram", "CompiledTrainingStep", "compile_training", "STAGES"]


# --------------------------------------------------------------------------- helpers


def _capture_fn():
    # Looked up at call time (tests substitute the module).
    return importlib.import_module("trainkernel.frontend.capture").capture


def _lower_fn():
    return importlib.import_module("trainkernel.pipeline").lower


def _arg_names(step: Callable, n: int) -> list[str]:
    """Names of the step's first n positional parameters (`args[i]` where unknown)."""
    names = [f"args[{i}]" for i in range(n)]
    try:
        params = list(inspect.signature(step).parameters.values())
    except (TypeError, ValueError):
        return names
    for i, p in enumerate(params[:n]):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names[i] = p.name
        else:  # *args: the rest keep args[i]
            break
    return names


def _leaf_paths(args: tuple, names: Sequence[str]) -> list[str]:
    paths = []
    for path, _ in pytree.tree_flatten_with_path(args)[0]:
        head, rest = path[0], path[1:]
        idx = getattr(head, "idx", None)
        base = names[idx] if isinstance(idx, int) and idx < len(names) else pytree.keystr((head,))
        paths.append(base + pytree.keystr(rest))
    return paths


def _check_no_bool_results(captured) -> None:
    """A bool result has no buffer type in the kernel (masks live there as 0/1
    floats): say so, naming the result, instead of failing in the printer."""
    from xdsl.dialects.builtin import i1

    outputs = captured.func.function_type.outputs.data
    results = pytree.tree_unflatten(list(range(len(outputs))), captured.out_spec)
    for path, t in zip(_leaf_paths((results,), ["result"]), outputs):
        if getattr(t, "element_type", None) == i1:
            raise ValueError(
                f"{path}: bool results are not supported by the CUDA backend yet (masks computed "
                "inside the step are); return it as a 0/1 float tensor (mask.float()), or use "
                "trainkernel.capture + trainkernel.interpret on CPU"
            )


def _fmt_shape(shape) -> str:
    return str(tuple(int(s) for s in shape))


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.numel() == 0 or b.numel() == 0:
        return False
    a0, b0 = a.data_ptr(), b.data_ptr()
    a1 = a0 + a.numel() * a.element_size()
    b1 = b0 + b.numel() * b.element_size()
    return a0 < b1 and b0 < a1


class _Star:
    def __repr__(self) -> str:
        return "*"


def _describe(spec) -> str:
    """A pytree structure in one line: `(*, (*, *), [*])`, one `*` per tensor."""
    return repr(pytree.tree_unflatten([_Star()] * spec.num_leaves, spec))


MAX_GRID = DEFAULT_TARGET.max_grid_dim
"""The most blocks a launch may ask for (CUDA's gridDim.x limit: the target's)."""


def _check_options(inplace, grid, arch) -> None:
    """compile_training's keyword options, checked before any work."""
    if not isinstance(inplace, bool):
        raise TypeError(f"inplace must be True or False, got {inplace!r}")
    if isinstance(grid, bool) or not isinstance(grid, int):
        raise TypeError(f"grid must be an int (0: the compiler chooses), got {grid!r}")
    if not 0 <= grid <= MAX_GRID:
        raise ValueError(f"grid must be 0 (the compiler chooses) or a block count from 1 to {MAX_GRID}, got {grid}")
    if arch is not None:
        normalize_arch(arch)  # ValueError naming the bad architecture


class _Leaf:
    __slots__ = ("path", "shape", "dtype")

    def __init__(self, path: str, shape: tuple[int, ...], dtype: torch.dtype):
        self.path, self.shape, self.dtype = path, shape, dtype


# --------------------------------------------------------------------------- public


def compile_training(
    step: Callable,
    example_args: Sequence[Any],
    *,
    inplace: bool = True,
    cache_dir: str | os.PathLike | None = None,
    arch: str | None = None,
    build: bool = True,
    grid: int = 0,
    resident: str = "auto",
    gemm_engine: str = "auto",
) -> "CompiledTrainingStep":
    """Capture `step`, lower it to one CUDA megakernel and (by default) nvcc-compile it.

    Args:
        step: ``step(state, *batch) -> (..., new_state)``, pure (torch.func): a tuple
            whose last element has the structure, shapes and dtypes of ``state``
            (the first argument); the elements before it (loss, gradients,
            metrics) are returned as computed.
        example_args: the positional arguments, as a tuple; tensors on any device
            (only shape, dtype and contiguity are used; their values are not read).
        inplace: write the new state into the state tensors passed in (otherwise
            every result gets a fresh buffer).
        grid: blocks of the cooperative launch, 1 to 2**31-1; 0 (default) lets
            the compiler's cost model choose (one block for tiny steps, where block
            barriers are far cheaper than grid barriers). A forced grid means a grid kernel.
        resident: "auto" (default): the cost model decides whether the step runs
            resident in one cluster (its working set in shared memory) or as a
            grid kernel; "force": resident whenever it fits; "off": grid kernel.
        gemm_engine: the grid kernel's gemms: "auto" (default): the cost model
            picks mma.sync tiles or, on sm_90, the Hopper wgmma tile (TMA,
            sm_90a code); "mma" or "wgmma" force one.
        cache_dir: kernel cache directory (default ``$TRAINKERNEL_CACHE_DIR`` or
            ``~/.cache/trainkernel``).
        arch: CUDA architecture to build for (default: the visible GPU's, else sm_90).
        build: run nvcc now (``compile_seconds["nvcc"]``); otherwise on first use.

    Returns a `CompiledTrainingStep`. Raises ValueError / TypeError for unusable
    options or example arguments or a step whose results do not match the
    state's structure, `trainkernel.frontend.CaptureError` for a step that
    cannot be captured and `trainkernel.backend.build.BuildError` (its
    `CacheError` for an unusable cache directory) when the kernel does not build.
    """
    t_start = time.perf_counter()
    _check_options(inplace, grid, arch)
    if not isinstance(example_args, (tuple, list)):
        raise TypeError(
            f"example_args must be a tuple of the step's positional arguments, got {type(example_args).__name__}"
        )
    args = tuple(example_args)
    if not args:
        raise ValueError("example_args is empty: the first argument must be the state (parameter pytree)")
    names = _arg_names(step, len(args))
    flat, in_spec = pytree.tree_flatten(args)
    paths = _leaf_paths(args, names)
    leaves: list[_Leaf] = []
    for path, leaf in zip(paths, flat):
        if not isinstance(leaf, torch.Tensor):
            raise TypeError(
                f"{path}: example arguments must be tensors, got {type(leaf).__name__}; "
                "close over Python constants in the step instead"
            )
        if not leaf.is_contiguous():
            raise ValueError(
                f"{path}: example argument must be contiguous (shape {_fmt_shape(leaf.shape)}, "
                f"strides {tuple(leaf.stride())}); pass .contiguous()"
            )
        if leaf.dtype == torch.bool:
            raise ValueError(
                f"{path}: bool arguments are not supported by the CUDA backend yet (masks computed inside the "
                "step are); pass it as a 0/1 float tensor (mask.float()) and compare it with 0 in the step, or use "
                "trainkernel.capture + trainkernel.interpret on CPU"
            )
        leaves.append(_Leaf(path, tuple(int(s) for s in leaf.shape), leaf.dtype))
    state_spec = pytree.tree_structure(args[0])
    n_state = state_spec.num_leaves
    if n_state == 0:
        raise ValueError(f"{names[0]}: the state (first argument) holds no tensors")

    # Only shapes/dtypes/strides matter: trace on meta tensors, never on real data.
    abstract = tuple(
        pytree.tree_map(lambda t: torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="meta"), a)
        for a in args
    )

    t0 = time.perf_counter()
    captured = _capture_fn()(step, abstract)
    t_capture = time.perf_counter() - t0
    # The result structure is checked before lowering: an in-place lowering
    # pairs the new state's results with the state's buffers.
    out_types = _result_types(captured)
    _check_structure(captured.out_spec, out_types, state_spec, leaves[:n_state], names[0])
    _check_no_bool_results(captured)

    if resident not in ("auto", "force", "off"):
        raise ValueError(f"resident must be 'auto', 'force' or 'off', got {resident!r}")
    if gemm_engine not in ("auto", "mma", "wgmma"):
        raise ValueError(f"gemm_engine must be auto, mma or wgmma, got {gemm_engine!r}")
    if gemm_engine == "auto" and not wgmma_runs_on(normalize_arch(arch)):
        gemm_engine = "mma"  # wgmma is Hopper's alone
    lowered, cached = lowering_cache.lower_cached(
        captured, cache_dir, _lower_fn(), inplace=inplace, grid=grid, resident=resident, engine=gemm_engine)
    t_passes = lowered.pass_seconds

    compiled = CompiledTrainingStep(
        step=step,
        captured=captured,
        lowered=lowered,
        in_spec=in_spec,
        leaves=leaves,
        arg_names=names,
        n_state=n_state,
        state_spec=state_spec,
        inplace=inplace,
        gemm_engine=gemm_engine,
        cache_dir=cache_dir,
        arch=arch,
        out_types=out_types,
    )
    compiled.compile_seconds.update(capture=t_capture, passes=t_passes)
    compiled.lowering_cached = cached
    if build:
        compiled.build()
    compiled.compile_seconds["total"] = time.perf_counter() - t_start
    return compiled


def _result_types(captured) -> list[tuple[tuple[int, ...], torch.dtype]]:
    """(shape, dtype) of each of the step's flat results, from the captured function's type."""
    fn = next(op for op in captured.module.ops if isinstance(op, func.FuncOp))
    return [(tuple(int(d) for d in t.get_shape()), elements.torch_dtype(t.get_element_type()))
            for t in fn.function_type.outputs.data]


def _check_structure(out_spec, out_types, state_spec, state_leaves: list[_Leaf], state_name: str) -> None:
    """The step returns a tuple (or list) whose LAST element is the new state:
    the structure of `state_name`, leaf for leaf the same shapes and dtypes.
    Everything before it (a loss, gradients, metrics: any pytree of tensors) is
    returned as computed and not checked here."""
    tree = pytree.tree_unflatten(list(range(out_spec.num_leaves)), out_spec)
    expected = _describe(state_spec)
    if not isinstance(tree, (tuple, list)) or len(tree) == 0:
        raise ValueError(
            "the step must return a tuple whose last element is the new state, e.g. (loss, new_state) or "
            f"(loss, grads, new_state), with new_state structured like {state_name}: expected (..., {expected}), "
            f"got {_describe(out_spec)}"
        )
    last = len(tree) - 1
    spec = pytree.tree_structure(tree[last])
    if spec != state_spec:
        raise ValueError(
            f"the step's last result (result[{last}]) is the new state and must have the structure of {state_name}: "
            f"expected {expected}, got {_describe(spec)} (the whole result is {_describe(out_spec)})"
        )
    for leaf, k in zip(state_leaves, pytree.tree_leaves(tree[last])):
        shape, dtype = out_types[k]
        if shape != leaf.shape:
            raise ValueError(
                f"new_state for {leaf.path} (result[{last}]): expected shape {_fmt_shape(leaf.shape)}, got {_fmt_shape(shape)}"
            )
        if dtype != leaf.dtype:
            raise ValueError(
                f"new_state for {leaf.path} (result[{last}]): expected dtype {_dtype_name(leaf.dtype)}, "
                f"got {_dtype_name(dtype)}"
            )


class CompiledTrainingStep:
    """A training step compiled to one cooperative CUDA kernel.

    Attributes:
        compile_seconds: ``{"capture", "passes", "nvcc", "total"}`` in seconds.
        meta: the kernel's `KernelMeta` (buffers, results, arena, grid, block, smem).
        kernel_name: name of the ``__global__`` megakernel.
        inplace: whether the state is updated in place.
    """

    def __init__(self, *, step, captured, lowered, in_spec, leaves, arg_names, n_state, state_spec,
                 inplace, cache_dir, arch, out_types, gemm_engine="auto"):
        self.step = step
        self.gemm_engine = gemm_engine
        self.captured = captured
        self.lowered = lowered
        self.meta = lowered.meta
        self.kernel_name: str = lowered.kernel_name
        self.inplace = bool(inplace)
        self.cache_dir = cache_dir
        self._arch = arch
        self._in_spec = in_spec
        self._leaves = leaves
        self._arg_names = list(arg_names)
        self._n_state = n_state
        self._state_spec = state_spec
        self._builds: dict[str, BuildResult] = {}
        self._arenas: dict[int, torch.Tensor] = {}
        self._libs: dict[int, Any] = {}
        self.compile_seconds: dict[str, float] = {"capture": 0.0, "passes": 0.0, "nvcc": 0.0, "total": 0.0}
        # The lowering came from the cache (trainkernel.lowering_cache): "passes" is the lookup's time.
        self.lowering_cached = False
        self._check_meta()
        self._out_spec = self._check_results(out_types)

    # ------------------------------------------------------------------ checks at compile time

    def _check_meta(self) -> None:
        """The kernel's buffer table must agree with the example arguments."""
        meta = self.meta
        n_out = len(meta.results)
        for pos, b in enumerate(meta.buffers):
            if b.role == "input":
                if not 0 <= b.index < len(self._leaves):
                    raise RuntimeError(f"internal error: kernel buffer {pos} names input {b.index} of {len(self._leaves)}")
                leaf = self._leaves[b.index]
                if tuple(b.shape) != leaf.shape or b.dtype != leaf.dtype:
                    raise RuntimeError(
                        f"internal error: kernel buffer {pos} ({leaf.path}) is {_fmt_shape(b.shape)} "
                        f"{_dtype_name(b.dtype)}, the argument is {_fmt_shape(leaf.shape)} {_dtype_name(leaf.dtype)}"
                    )
            elif b.role == "output":
                if not 0 <= b.index < n_out:
                    raise RuntimeError(f"internal error: kernel buffer {pos} names result {b.index} of {n_out}")
            else:
                raise RuntimeError(f"internal error: kernel buffer {pos} has unknown role {b.role!r}")
        for k, res in enumerate(meta.results):
            kind, pos = res
            if kind != "buffer" or not 0 <= pos < len(meta.buffers):
                raise RuntimeError(f"internal error: result {k} maps to {res!r}")

    def _check_results(self, out_types):
        """The kernel's result buffers must be the step's results: `out_types`,
        the (shape, dtype) of its flat results as captured, which compile_training
        has checked against the state (the last result mirrors the state pytree).
        """
        out_spec = self.captured.out_spec
        meta = self.meta
        n = len(meta.results)
        if out_spec.num_leaves != n or len(out_types) != n:
            raise RuntimeError(f"internal error: the step returns {len(out_types)} tensors, the kernel {n}")
        kernel_types = [(tuple(meta.buffers[pos].shape), meta.buffers[pos].dtype) for _, pos in meta.results]
        for k, ((shape, dtype), (kshape, kdtype)) in enumerate(zip(out_types, kernel_types)):
            if shape != kshape or dtype != kdtype:
                raise RuntimeError(
                    f"internal error: result {k} of the step is {_fmt_shape(shape)} {_dtype_name(dtype)}, "
                    f"the kernel's buffer is {_fmt_shape(kshape)} {_dtype_name(kdtype)}"
                )
        tree = pytree.tree_unflatten(list(range(n)), out_spec)
        self._new_state_results = list(pytree.tree_leaves(tree[-1]))
        return out_spec

    # ------------------------------------------------------------------ looking inside

    @property
    def stages(self) -> tuple[str, ...]:
        """Stage names accepted by `ir` (besides "cuda")."""
        return tuple(dict.fromkeys([*STAGES, *self.lowered.stages]))

    def ir(self, stage: str) -> str:
        """The IR text after lowering to `stage`: "tk", "sched" or "tile" ("cuda" = `cuda_source`)."""
        if stage == "cuda":
            return self.cuda_source
        if stage not in self.lowered.stages:
            valid = ", ".join(repr(s) for s in self.stages)
            raise ValueError(f"unknown stage {stage!r}; valid stages: {valid} (and 'cuda' for the generated source)")
        return self.lowered.stages[stage]

    @property
    def cuda_source(self) -> str:
        """The generated .cu source (megakernel + extern "C" launcher)."""
        return self.lowered.cuda_source

    @property
    def pipeline(self) -> str:
        """The exact `-p` pass list this step was lowered with: `trainkernel-opt -p
        "$PIPELINE" -t cuda` on `str(trainkernel.capture(step, args))` prints
        `cuda_source`."""
        return self.lowered.pipeline

    def stats(self) -> dict[str, Any]:
        """Phases, grid barriers, generated CUDA lines and launch geometry."""
        return {
            "phases": int(self.meta.phases),
            "barriers": int(self.meta.grid_barriers),
            "cuda_lines": self.cuda_source.count("\n") + 1,
            "arena_bytes": int(self.meta.arena_bytes),
            "grid": int(self.meta.grid),
            "block": int(self.meta.block),
            "smem_bytes": int(self.meta.smem_bytes),
        }

    # ------------------------------------------------------------------ building

    def build(self, arch: str | None = None) -> Path:
        """nvcc-compile the kernel (cached) and return the shared library's path. Needs no GPU.

        `arch` defaults to the one given to `compile_training`, else the visible
        GPU's, else sm_90.
        """
        return self._build_result(arch).path

    def _build_result(self, arch: str | None = None) -> BuildResult:
        arch_s = normalize_arch(arch or self._arch or default_arch())
        res = self._builds.get(arch_s)
        if res is not None and not verify_library(res):  # changed on disk since it was built: build again
            res = None
        if res is None:
            res = _build(self.cuda_source, arch=arch_s, cache_dir=self.cache_dir)
            self._builds[arch_s] = res
            self.compile_seconds["nvcc"] += res.seconds
        return res

    @property
    def library_path(self) -> Path | None:
        """Path of the last library built (None before `build`)."""
        return next(reversed(self._builds.values())).path if self._builds else None

    def _library(self, device: torch.device):
        """The loaded library for `device` (built for its architecture), cached per device."""
        lib = self._libs.get(device.index)
        if lib is not None:
            return lib
        from trainkernel.runtime import load_library

        major, minor = torch.cuda.get_device_capability(device)
        arch = self._arch or f"sm_{major}{minor}"
        lib = load_library(self._build_result(arch).path)
        if not self._can_run(lib):
            lib = self._fall_back_to_grid(arch)
        n = lib.num_buffers()
        if n is not None and n != len(self.meta.buffers):
            raise RuntimeError(
                f"internal error: {lib.path.name} takes {n} buffers, the kernel metadata lists {len(self.meta.buffers)}"
            )
        self._libs[device.index] = lib
        return lib

    @staticmethod
    def _can_run(lib) -> bool:
        """False when a resident kernel's cluster cannot be co-resident on the current device."""
        cluster = getattr(lib, "cluster", None)
        if cluster is None or not cluster():
            return True
        try:
            lib.max_active_blocks_per_sm()
        except RuntimeError:
            return False
        return True

    def _fall_back_to_grid(self, arch: str):
        """The configuration the cost model ranks next: the grid kernel (it runs on
        any device). Said out loud; never eager PyTorch."""
        from trainkernel.runtime import load_library

        warnings.warn(
            f"{self.kernel_name}: the resident kernel (one cluster of {self.meta.grid} blocks, "
            f"{self.meta.smem_bytes} bytes of shared memory each) cannot be co-resident on this device; "
            "running the grid kernel instead (compile with resident='off' to choose it directly)",
            RuntimeWarning,
            stacklevel=3,
        )
        lowered = _lower_fn()(self.captured, inplace=self.inplace, grid=0, resident="off", engine=self.gemm_engine)
        self.lowered, self.meta, self.kernel_name = lowered, lowered.meta, lowered.kernel_name
        self._builds.clear()
        self._arenas.clear()
        self._libs.clear()
        self._check_meta()
        return load_library(self._build_result(arch).path)

    # ------------------------------------------------------------------ running

    def _require_gpu(self) -> None:
        if not torch.cuda.is_available():
            path = self.build()
            raise RuntimeError(f"no CUDA device: the kernel was built at {path} but cannot run")

    def validate(self, *args) -> list[torch.Tensor]:
        """Check the arguments against the compiled signature; returns the flat tensors.

        Every leaf must be a contiguous CUDA tensor of the compiled shape and
        dtype, all on one device; in-place state must not share memory with
        another argument. Raises TypeError/ValueError naming the argument path
        (e.g. ``params[0]: expected shape (32, 64), got (32, 65)``). Nothing is
        launched or written.
        """
        return self._validate(args, "cuda")

    def _validate(self, args: tuple, device_type: str) -> list[torch.Tensor]:
        flat, spec = pytree.tree_flatten(tuple(args))
        if spec != self._in_spec:
            expected = pytree.tree_unflatten([f"<{l.path}>" for l in self._leaves], self._in_spec)
            raise TypeError(
                f"arguments do not match the compiled signature: expected {len(self._leaves)} tensors structured as "
                f"{expected!r}, got {_describe(spec)}"
            )
        device = None
        first = None
        for leaf, t in zip(self._leaves, flat):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{leaf.path}: expected a tensor, got {type(t).__name__}")
            if t.device.type != device_type:
                what = "a CUDA tensor" if device_type == "cuda" else f"a {device_type} tensor"
                raise ValueError(f"{leaf.path}: expected {what}, got device {t.device}")
            if device is None:
                device, first = t.device, leaf.path
            elif t.device != device:
                raise ValueError(f"{leaf.path}: expected device {device} (like {first}), got {t.device}")
            if tuple(t.shape) != leaf.shape:
                raise ValueError(f"{leaf.path}: expected shape {_fmt_shape(leaf.shape)}, got {_fmt_shape(t.shape)}")
            if t.dtype != leaf.dtype:
                raise ValueError(f"{leaf.path}: expected dtype {_dtype_name(leaf.dtype)}, got {_dtype_name(t.dtype)}")
            if not t.is_contiguous():
                raise ValueError(
                    f"{leaf.path}: expected a contiguous tensor, got strides {tuple(t.stride())} "
                    f"for shape {_fmt_shape(t.shape)}; pass .contiguous()"
                )
        written = self._written_inputs()
        for i in written:
            for j in range(len(flat)):
                if j != i and _overlaps(flat[i], flat[j]):
                    raise ValueError(
                        f"{self._leaves[i].path} is updated in place but shares memory with {self._leaves[j].path}"
                    )
        return flat

    def _written_inputs(self) -> list[int]:
        """Flat input indices the kernel writes (state updated in place)."""
        buffers = self.meta.buffers
        return sorted({buffers[pos].index for _, pos in self.meta.results if buffers[pos].role == "input"})

    def _arena(self, device: torch.device, fresh: bool = False) -> torch.Tensor:
        # Zeroed once: a split-K gemm's tile counters (tile.gemm workspace) start
        # at zero and every launch leaves them at zero again.
        nbytes = max(1, int(self.meta.arena_bytes))
        if fresh:
            return torch.zeros(nbytes, dtype=torch.uint8, device=device)
        arena = self._arenas.get(device.index)
        if arena is None:
            arena = self._arenas[device.index] = torch.zeros(nbytes, dtype=torch.uint8, device=device)
        return arena

    def _outputs(self, device: torch.device) -> dict[int, torch.Tensor]:
        """Fresh tensors for the kernel's output buffers, by launcher position."""
        return {
            pos: torch.empty(tuple(b.shape), dtype=b.dtype, device=device)
            for pos, b in enumerate(self.meta.buffers)
            if b.role == "output"
        }

    def _bind(self, flat: list[torch.Tensor], outputs: dict[int, torch.Tensor]) -> list[torch.Tensor]:
        """The launcher's buffer list: inputs from `flat`, outputs from `outputs`."""
        return [flat[b.index] if b.role == "input" else outputs[pos] for pos, b in enumerate(self.meta.buffers)]

    def _launch(self, lib, buffers: list[torch.Tensor], arena: torch.Tensor, device: torch.device,
                chain: tuple[int, int] | None = None) -> None:
        """One launch on the device's current stream; `chain` = (index, count): launch
        `index` of a chain of `count` (lib.launch_chain) instead of a chain of one."""
        with torch.cuda.device(device):
            grid = lib.co_resident_grid(int(self.meta.grid), device.index)
            stream = torch.cuda.current_stream(device).cuda_stream
            if chain is None:
                lib.launch(buffers, arena, grid, stream)
            else:
                lib.launch_chain(buffers, arena, grid, stream, *chain)

    def _results(self, buffers: list[torch.Tensor]):
        return pytree.tree_unflatten([buffers[pos] for _, pos in self.meta.results], self._out_spec)

    def __call__(self, *args):
        """Run one step on the current CUDA stream; returns what ``step(*args)`` returns.

        Arguments are validated first (see `validate`); on any mismatch nothing
        is launched and no state changes. In-place: the returned new state
        leaves are the state tensors passed in, now updated. Raises RuntimeError
        when no CUDA device is available. The call is stream-ordered and can
        itself be recorded inside a ``torch.cuda.graph`` (after one eager call).
        Calls share one workspace arena per device: do not run the same compiled
        step on two streams at once (or replay a graph that recorded a call while
        another call is in flight); `capture()` gives its graph its own arena.
        """
        self._require_gpu()
        flat = self.validate(*args)
        device = flat[0].device
        lib = self._library(device)
        buffers = self._bind(flat, self._outputs(device))
        self._launch(lib, buffers, self._arena(device), device)
        return self._results(buffers)

    def capture(self, *args, warmup: int = 3, steps: int = 1, feed_back: bool = True,
                batches: Sequence[Sequence[torch.Tensor]] | None = None) -> "CapturedProgram":
        """Record `steps` training steps as a CUDA Graph on static buffers.

        The supplied tensors become the program's static inputs (`.inputs`):
        copy each new batch into them before `replay()`. With `batches` (a
        sequence of tuples of the non-state arguments, e.g. ``[(x0, y0), (x1,
        y1)]``), step i of the graph reads ``batches[i % len(batches)]``
        instead of ``args[1:]`` (resident batches; they are static too).

        The step runs `warmup` times first (on a side stream, so that lazy
        loading and occupancy queries happen outside capture); the supplied
        state is then restored to its values from before warm-up, so the
        first replay starts from the state that was passed in. With
        `feed_back` (default) every step leaves the new state in the state
        inputs (in place, or by a copy after the step when compiled with
        ``inplace=False``), so each replay continues training. `.outputs`
        are static tensors that each replay overwrites with the results of
        its last step. Arguments are validated as in `__call__`.

        A resident kernel compiled in place runs all `steps` in ONE launch
        when `feed_back` is on: the kernel loops over the steps, keeping the
        state on chip and reading step i's batch through a table of pointers
        (`.launches` is then 1; otherwise one launch a step). A grid kernel
        compiled in place with target.grid_carried_casts runs the steps as one
        chain of launches: the first casts the weights to the compute dtype,
        each update stores the next launch's cast. The results are the bits of
        `steps` separate launches.
        """
        if warmup < 0 or steps < 1:
            raise ValueError(f"need warmup >= 0 and steps >= 1, got warmup={warmup}, steps={steps}")
        self._require_gpu()
        flat = self.validate(*args)
        device = flat[0].device
        step_flats = [flat]
        if batches is not None:
            if len(batches) == 0:
                raise ValueError("batches is empty")
            step_flats = []
            for i, batch in enumerate(batches):
                try:
                    f = self.validate(args[0], *tuple(batch))
                except (TypeError, ValueError) as exc:
                    raise type(exc)(f"batches[{i}]: {exc}") from None
                if f[0].device != device:
                    raise ValueError(f"batches[{i}]: on {f[0].device}, the state is on {device}")
                step_flats.append(f)
        lib = self._library(device)
        with torch.cuda.device(device):  # occupancy query and module load happen before capture
            lib.co_resident_grid(int(self.meta.grid), device.index)
        outputs = self._outputs(device)
        bound = [self._bind(f, outputs) for f in step_flats]
        arena = self._arena(device, fresh=True)  # the graph owns its workspace
        commits = []
        if feed_back:
            for leaf_i, k in enumerate(self._new_state_results):
                dst = flat[leaf_i]
                src = bound[0][self.meta.results[k][1]]
                if src is not dst:
                    commits.append((dst, src))

        # A grid kernel that carries its casts of the state from launch to launch
        # (target.grid_carried_casts): the graph's launches are one chain, in
        # place, where nothing but them writes the state between them.
        chained = feed_back and self.inplace and lib.chains()

        def one_step(i: int, count: int):
            self._launch(lib, bound[i % len(bound)], arena, device, (i, count) if chained else None)
            for dst, src in commits:
                dst.copy_(src)

        # Several steps a launch: in place (the state feeds back through the
        # kernel's own homes and stores), and a kernel that loops (resident).
        columns = lib.step_inputs() if steps > 1 and feed_back and self.inplace and lib.cluster() else None
        one_launch = columns is not None
        # The step table: row i holds step i's batch pointers (none where every input is state).
        table = torch.tensor([[bound[i % len(bound)][c].data_ptr() for c in columns] for i in range(steps)],
                             dtype=torch.int64, device=device) if columns else None

        def all_steps():
            if not one_launch:
                for i in range(steps):
                    one_step(i, steps)
                return
            with torch.cuda.device(device):
                grid = lib.co_resident_grid(int(self.meta.grid), device.index)
                lib.launch_steps(bound[0], arena, grid, torch.cuda.current_stream(device).cuda_stream, steps, table)

        state = flat[: self._n_state]
        with torch.cuda.device(device):
            saved = [t.clone() for t in state]
            side = torch.cuda.Stream(device)
            side.wait_stream(torch.cuda.current_stream(device))
            try:
                with torch.cuda.stream(side):
                    for i in range(warmup):
                        one_step(i, warmup)
            finally:
                # Whether warm-up finished or failed, the caller's state is restored.
                torch.cuda.current_stream(device).wait_stream(side)
                for t, s in zip(state, saved):
                    t.copy_(s)
            del saved
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                all_steps()
        last = bound[(steps - 1) % len(bound)]
        return CapturedProgram(
            graph=graph,
            inputs=pytree.tree_unflatten(flat, self._in_spec),
            outputs=self._results(last),
            steps=steps,
            launches=1 if one_launch else steps,
            batches=[tuple(b) for b in batches] if batches is not None else None,
            keepalive=(bound, outputs, arena, commits, table),
        )

    def __repr__(self) -> str:
        sig = ", ".join(f"{l.path}: {_fmt_shape(l.shape)} {_dtype_name(l.dtype)}" for l in self._leaves)
        return f"<CompiledTrainingStep {self.kernel_name} inplace={self.inplace} ({sig})>"


class CapturedProgram:
    """A CUDA Graph of compiled training steps on static buffers.

    Attributes:
        inputs: the static arguments (the tensors given to `capture`), same
            structure as the step's arguments; copy new batches into them.
        outputs: the static results, same structure as the step's results.
        steps: training steps per `replay`.
        launches: kernel launches per `replay` (1: the steps loop inside one).
        batches: the resident batches given to `capture` (or None).
        graph: the `torch.cuda.CUDAGraph`.
    """

    def __init__(self, *, graph, inputs, outputs, steps, keepalive, batches=None, launches=None):
        self.graph = graph
        self.batches = batches
        self.inputs = inputs
        self.outputs = outputs
        self.steps = steps
        self.launches = steps if launches is None else launches
        self._keepalive = keepalive  # raw pointers in the graph refer to these

    @property
    def state(self):
        """The state inputs (first argument), updated by every replay."""
        return self.inputs[0]

    def replay(self) -> Any:
        """Run the recorded steps on the current stream; returns `outputs`."""
        self.graph.replay()
        return self.outputs
