"""Load a built megakernel library with ctypes and launch it on torch's stream.

The generated `.cu` exports (contract with the CUDA printer)::

    extern "C" int tk_launch(void** buffers, void* arena, int grid, void* stream);
    extern "C" int tk_max_active_blocks_per_sm();

and a resident kernel also (several training steps a launch)::

    extern "C" int tk_launch_steps(void** buffers, void* arena, int grid, void* stream,
                                   int steps, void* const* step_inputs);
    extern "C" int tk_step_inputs();        // columns of the step table
    extern "C" int tk_step_input(int c);    // buffer position of column c

and a grid kernel that carries casts from launch to launch (target.grid_carried_casts)::

    extern "C" int tk_launch_chain(void** buffers, void* arena, int grid, void* stream,
                                   int index, int count);  // launch `index` of a chain of `count`

and a grid kernel launched in clusters, whose gemms walk as pairs
(target.gemm_cluster_pairs) or whose split-K slices meet in the cluster
(target.split_k_cluster_fixup)::

    extern "C" int tk_gemm_cluster();         // blocks a cluster (2, 4 or 8)
    extern "C" int tk_max_active_clusters();  // clusters that can be co-resident

`tk_launch` launches the cooperative kernel with cudaLaunchCooperativeKernel
(cudaLaunchKernelEx where it has more attributes) on `stream` (a
cudaStream_t) and returns the cudaError_t as an int. A cooperative launch
fails unless every block is co-resident, so the grid is clamped to
``tk_max_active_blocks_per_sm() * SM count``, or for a clustered kernel to the
co-resident clusters' blocks, in whole clusters.

The stream passed is ``torch.cuda.current_stream().cuda_stream``, so a launch
is ordered with torch's work and can be recorded by ``torch.cuda.graph``.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Sequence
from pathlib import Path

__all__ = ["CudaError", "KernelLibrary", "cuda_error_name", "load_library"]

# cudaError_t values worth naming without asking the CUDA runtime.
_CUDA_ERRORS = {
    0: "cudaSuccess",
    1: "cudaErrorInvalidValue",
    2: "cudaErrorMemoryAllocation",
    3: "cudaErrorInitializationError",
    9: "cudaErrorInvalidConfiguration",
    35: "cudaErrorInsufficientDriver",
    98: "cudaErrorInvalidDeviceFunction",
    100: "cudaErrorNoDevice",
    101: "cudaErrorInvalidDevice",
    209: "cudaErrorNoKernelImageForDevice",
    400: "cudaErrorInvalidResourceHandle",
    700: "cudaErrorIllegalAddress",
    701: "cudaErrorLaunchOutOfResources",
    702: "cudaErrorLaunchTimeout",
    719: "cudaErrorLaunchFailure",
    720: "cudaErrorCooperativeLaunchTooLarge",
    801: "cudaErrorNotSupported",
    900: "cudaErrorStreamCaptureUnsupported",
    901: "cudaErrorStreamCaptureInvalidated",
    905: "cudaErrorStreamCaptureImplicit",
}

_HINTS = {
    209: "the library was built for another GPU architecture; rebuild for this device",
    98: "the library was built for another GPU architecture; rebuild for this device",
    720: "the grid is larger than what can be co-resident; the runtime clamps it, so the occupancy query disagrees with the launch",
    35: "no usable NVIDIA driver",
    100: "no CUDA device is visible",
}


def cuda_error_name(code: int) -> str:
    """`cudaErrorXxx` for a cudaError_t value, or `cudaError(<code>)`."""
    return _CUDA_ERRORS.get(code, f"cudaError({code})")


class CudaError(RuntimeError):
    """A CUDA runtime call in the kernel library returned an error."""

    def __init__(self, what: str, code: int):
        self.code = code
        hint = _HINTS.get(code)
        super().__init__(f"{what} failed: {cuda_error_name(code)} ({code})" + (f": {hint}" if hint else ""))


def _void_p(value) -> int | None:
    """A pointer for ctypes: a tensor's data_ptr(), an int, or None."""
    if value is None:
        return None
    if hasattr(value, "data_ptr"):
        return int(value.data_ptr())
    return int(value)


def _pointers(buffers: Sequence):
    """The launcher's `void** buffers`: tensors or raw pointers, in launcher order."""
    return (ctypes.c_void_p * max(1, len(buffers)))(*[_void_p(b) for b in buffers])


class KernelLibrary:
    """One loaded megakernel library (`tk_launch`, `tk_max_active_blocks_per_sm`)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        try:
            self._lib = ctypes.CDLL(str(self.path))
        except OSError as exc:
            raise RuntimeError(f"cannot load kernel library {self.path}: {exc}") from exc
        try:
            launch = self._lib.tk_launch
            occupancy = self._lib.tk_max_active_blocks_per_sm
        except AttributeError as exc:
            raise RuntimeError(
                f"{self.path} does not export tk_launch and tk_max_active_blocks_per_sm (extern \"C\"): {exc}"
            ) from exc
        launch.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        launch.restype = ctypes.c_int
        occupancy.argtypes = []
        occupancy.restype = ctypes.c_int
        self._launch = launch
        self._occupancy = occupancy
        # Several steps a launch (resident kernels): all three entry points, or none.
        steps = [getattr(self._lib, n, None) for n in ("tk_launch_steps", "tk_step_inputs", "tk_step_input")]
        self._steps = steps if all(steps) else None
        if self._steps is not None:
            launch_steps, count, column = steps
            launch_steps.argtypes = launch.argtypes + [ctypes.c_int, ctypes.c_void_p]
            launch_steps.restype = count.restype = column.restype = ctypes.c_int
            count.argtypes, column.argtypes = [], [ctypes.c_int]
        # A chain of launches that carry casts (grid kernels, target.grid_carried_casts).
        self._chain = getattr(self._lib, "tk_launch_chain", None)
        if self._chain is not None:
            self._chain.argtypes = launch.argtypes + [ctypes.c_int, ctypes.c_int]
            self._chain.restype = ctypes.c_int
        self._grid_cache: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()

    def num_buffers(self) -> int | None:
        """`tk_num_buffers()` where the library exports it (a consistency check), else None."""
        return self._exported("tk_num_buffers")

    def max_active_blocks_per_sm(self) -> int:
        """Blocks of this kernel that fit on one SM (for the current device)."""
        n = int(self._occupancy())
        if n < 0:
            raise CudaError("tk_max_active_blocks_per_sm", -n)
        if n == 0:
            cluster = self.cluster()
            if cluster:
                raise RuntimeError(
                    f"{self.path.name}: the resident kernel's cluster of {cluster} blocks cannot be co-resident on "
                    "this device (shared memory per block, or no GPC with that many free SMs); compile the step "
                    "with resident=False for a grid kernel"
                )
            raise RuntimeError(
                f"{self.path.name}: not even one block of the kernel fits on an SM "
                "(too many registers, threads or shared memory per block)"
            )
        return n

    def _exported(self, name: str) -> int | None:
        """What the library's `extern "C" int name()` returns; None where it exports none."""
        fn = getattr(self._lib, name, None)
        if fn is None:
            return None
        fn.argtypes = []
        fn.restype = ctypes.c_int
        return int(fn())

    def _exported_count(self, name: str) -> int:
        """`_exported`, 0 where the library exports none."""
        return self._exported(name) or 0

    def cluster(self) -> int:
        """Blocks of the one cluster a resident kernel runs as (`tk_cluster()`); 0 for a grid kernel."""
        return self._exported_count("tk_cluster")

    def launch_cluster(self) -> int:
        """Blocks a cluster of a grid kernel launched in clusters (`tk_gemm_cluster()`:
        gemms that walk as pairs, target.gemm_cluster_pairs, or split gemms whose
        fix-up is the cluster's, target.split_k_cluster_fixup); 0 for any other kernel."""
        return self._exported_count("tk_gemm_cluster")

    def _co_resident_cluster_grid(self, requested: int, cluster: int) -> int:
        """A clustered grid kernel's grid: whole clusters, all co-resident
        (`tk_max_active_clusters()`: a GPC's SMs need not pair up, so blocks an SM
        times SMs would overcount)."""
        clusters = self._exported_count("tk_max_active_clusters")
        if clusters < 0:
            raise CudaError("tk_max_active_clusters", -clusters)
        grid = min(requested, clusters * cluster)
        grid -= grid % cluster
        if grid < cluster:
            raise RuntimeError(
                f"{self.path.name}: not one cluster of {cluster} blocks of the kernel can be resident on this "
                "device (shared memory per block, or no GPC with that many free SMs); compile the step without "
                "target.gemm_cluster_pairs and target.split_k_cluster_fixup")
        return grid

    def co_resident_grid(self, requested: int, device_index: int) -> int:
        """`requested` clamped to what can be co-resident on the device (cached per device);
        for a kernel in clusters (gemm_cluster), whole co-resident clusters.

        Must be called with `device_index` current (the occupancy query uses it).
        """
        if requested < 1:
            raise ValueError(f"grid must be at least 1, got {requested}")
        key = (device_index, requested)
        with self._lock:
            cached = self._grid_cache.get(key)
        if cached is not None:
            return cached
        import torch

        sms = torch.cuda.get_device_properties(device_index).multi_processor_count
        cluster = self.launch_cluster()
        if cluster:
            grid = self._co_resident_cluster_grid(requested, cluster)
        else:
            grid = max(1, min(requested, self.max_active_blocks_per_sm() * sms))
        with self._lock:
            self._grid_cache[key] = grid
        return grid

    def step_inputs(self) -> list[int] | None:
        """Buffer positions of the step table's columns (`tk_step_input`), for a
        kernel that runs several training steps a launch (`tk_launch_steps`, a
        resident kernel); None for one that cannot."""
        if self._steps is None:
            return None
        _, count, column = self._steps
        return [int(column(c)) for c in range(int(count()))]

    def launch_steps(self, buffers: Sequence, arena, grid: int, stream: int | None, steps: int, table) -> None:
        """Call `tk_launch_steps`: `steps` training steps in one launch, step s reading
        the pointers of row s of `table` (device memory, `steps` x len(step_inputs())
        pointers; None where there are no columns) for the inputs named by `step_inputs()`.

        Raises `CudaError` when the launch returns an error code."""
        if self._steps is None:
            raise RuntimeError(f"{self.path.name} runs one step a launch (no tk_launch_steps)")
        code = int(self._steps[0](_pointers(buffers), _void_p(arena), int(grid), _void_p(stream), int(steps),
                                  _void_p(table)))
        if code != 0:
            raise CudaError(f"tk_launch_steps ({self.path.name}, steps={steps})", code)

    def chains(self) -> bool:
        """Whether the kernel carries casts through a chain of launches (`tk_launch_chain`)."""
        return self._chain is not None

    def launch_chain(self, buffers: Sequence, arena, grid: int, stream: int | None, index: int, count: int) -> None:
        """Call `tk_launch_chain`: launch `index` of a chain of `count` on one arena,
        nothing but the chain writing the state between its launches (the first
        casts the state; the others read the casts the launch before stored).

        Raises `CudaError` when the launch returns an error code."""
        if self._chain is None:
            raise RuntimeError(f"{self.path.name} carries nothing between launches (no tk_launch_chain)")
        code = int(self._chain(_pointers(buffers), _void_p(arena), int(grid), _void_p(stream), int(index),
                               int(count)))
        if code != 0:
            raise CudaError(f"tk_launch_chain ({self.path.name}, launch {index} of {count}{self._clusters()})", code)

    def launch(self, buffers: Sequence, arena, grid: int, stream: int | None) -> None:
        """Call `tk_launch`. `buffers` are tensors or raw pointers, in launcher order.

        Raises `CudaError` when the launch returns an error code.
        """
        code = int(self._launch(_pointers(buffers), _void_p(arena), int(grid), _void_p(stream)))
        if code != 0:
            raise CudaError(f"tk_launch ({self.path.name}, grid={grid}{self._clusters()})", code)

    def _clusters(self) -> str:
        """A failed launch's words on its clusters: a clustered grid kernel also asks
        the driver for the cooperative and cluster attributes together."""
        c = self.launch_cluster()
        return (f", in clusters of {c} (target.gemm_cluster_pairs or split_k_cluster_fixup; with the cooperative "
                "attribute unless target.gemm_cluster_cooperative is off; a cluster fix-up also refuses a grid "
                "under its split gemm's units: cudaErrorInvalidConfiguration)" if c else "")


_LOADED: dict[str, KernelLibrary] = {}
_LOADED_LOCK = threading.Lock()


def load_library(path: str | os.PathLike) -> KernelLibrary:
    """Load (once per process) the library at `path`."""
    key = str(Path(path).resolve())
    with _LOADED_LOCK:
        lib = _LOADED.get(key)
        if lib is None:
            lib = _LOADED[key] = KernelLibrary(key)
        return lib
