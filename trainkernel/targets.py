"""Output targets of `trainkernel-opt -t NAME`."""

from collections.abc import Callable

from xdsl.utils.target import Target


def _mlir() -> type[Target]:
    from xdsl.targets.mlir import MLIRTarget

    return MLIRTarget


def _cuda() -> type[Target]:
    from trainkernel.backend.cuda_target import CudaTarget

    return CudaTarget


TARGETS: dict[str, Callable[[], type[Target]]] = {"mlir": _mlir, "cuda": _cuda}
