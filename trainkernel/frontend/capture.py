"""`trainkernel.capture`: a pure PyTorch training step -> one `func.func` of `tk` ops.

    captured = trainkernel.capture(step, (params, x, y))
    print(captured)                 # IR text; trainkernel-opt parses it back unchanged
    captured.module, captured.func  # xDSL ModuleOp and its func.func

The step is traced once with fake tensors (CPU or meta example arguments; only
shapes, dtypes and strides matter), functionalized, decomposed to a small aten
core and converted op by op (see `aten_to_tk`). Arguments are the flattened
pytree leaves of `example_args`, results the flattened leaves of what the step
returns; each carries its pytree path in a `tk.name` attribute.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils import _pytree as pytree
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from trainkernel.frontend.errors import CaptureError, UnsupportedOpError

__all__ = ["Captured", "CaptureError", "UnsupportedOpError", "capture"]


@dataclass
class Captured:
    """A captured training step."""

    module: ModuleOp
    step: Callable
    in_spec: pytree.TreeSpec
    out_spec: pytree.TreeSpec
    arg_names: tuple[str, ...]
    result_names: tuple[str, ...]
    graph_module: torch.fx.GraphModule | None = field(default=None, repr=False)

    @property
    def func(self) -> func.FuncOp:
        for op in self.module.ops:
            if isinstance(op, func.FuncOp):
                return op
        raise CaptureError("captured module holds no func.func")

    @property
    def name(self) -> str:
        return self.func.sym_name.data

    def __str__(self) -> str:
        from trainkernel.ir import print_module

        return print_module(self.module)

    def __repr__(self) -> str:
        return (
            f"Captured(@{self.name}: {len(self.arg_names)} args ({', '.join(self.arg_names)}) -> "
            f"{len(self.result_names)} results)"
        )


def _symbol_name(step: Callable) -> str:
    name = getattr(step, "__name__", "") or "step"
    name = re.sub(r"[^A-Za-z0-9_]", "_", name)  # a C identifier: the kernel is tk_<name>_kernel
    if not re.match(r"[A-Za-z_]", name):
        name = "step_" + name
    return name


def capture(step: Callable, example_args: Any) -> Captured:
    """Trace `step(*example_args)` into a `tk` module (see the module docstring).

    Raises `UnsupportedOpError` (naming the aten op and the step's source line)
    for anything `tk` cannot express, and `CaptureError` for arguments or
    results that are not tensors.
    """
    from trainkernel.dialects import make_context
    from trainkernel.frontend.aten_to_tk import build_module
    from trainkernel.frontend.tracing import trace
    from trainkernel.passes import PASSES

    if not isinstance(example_args, tuple):
        example_args = tuple(example_args) if isinstance(example_args, list) else (example_args,)
    # The fast path first: no user stack on the nodes (recording it is ~30% of
    # a trace, and a warm compile is mostly the trace) and one verification of
    # the whole module instead of one per op as it is built. A graph that does
    # not convert, or converts to IR that does not verify, is traced and
    # converted again with both, so the error names the step's source line.
    gm, in_spec, out_spec, arg_names, result_names = trace(step, example_args, stack_traces=False)
    try:
        module = build_module(gm, _symbol_name(step), arg_names, result_names, verify_ops=False)
        module.verify()
    except Exception:  # noqa: BLE001 - the slow path below raises it again, with the user's line
        gm, in_spec, out_spec, arg_names, result_names = trace(step, example_args, stack_traces=True)
        module = build_module(gm, _symbol_name(step), arg_names, result_names, verify_ops=True)
        try:
            module.verify()
        except Exception as exc:  # every op verified alone: an internal bug, not the user's
            raise CaptureError(f"internal error: captured IR does not verify: {exc}") from exc
    # Dead-code elimination only erases ops: what verified still does.
    PASSES["dce"]()().apply(make_context(), module)
    return Captured(
        module=module,
        step=step,
        in_spec=in_spec,
        out_spec=out_spec,
        arg_names=tuple(arg_names),
        result_names=tuple(result_names),
        graph_module=gm,
    )
