"""Trace a pure training step into a functional aten FX graph.

`make_fx(functionalize(step), tracing_mode="fake")` with a small decomposition
table: only shapes, dtypes and strides of the example arguments matter, so CPU
and meta tensors both work. Each node keeps the user's stack (frames outside
torch and this package) in `node.meta["stack_trace"]` when traced with
`stack_traces=True`, so errors can name the line of the step that produced an
op (recording them costs ~30% of a trace: `capture` traces without and again
with them only when converting the graph fails).
"""

from __future__ import annotations

import contextlib
import os
import sysconfig
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch.fx.experimental import proxy_tensor
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils import _pytree as pytree

from trainkernel.frontend.errors import CaptureError, SourceLocation, UnsupportedOpError

aten = torch.ops.aten

# Composite ops rewritten into the core that aten_to_tk lowers. Everything
# else reaches the converter as is and either has a handler or is an error.
_DECOMPOSE = [
    aten.mse_loss,
    aten.mse_loss_backward,
    aten._softmax,
    aten._log_softmax,
    aten._softmax_backward_data,
    aten._log_softmax_backward_data,
    aten.addcmul,
    aten.addcdiv,
    aten.mv,
    # losses and normalizations, into pointwise ops, comparisons/selects and reductions
    aten.huber_loss,
    aten.huber_loss_backward,
    aten.smooth_l1_loss,
    aten.smooth_l1_loss_backward,
    aten.binary_cross_entropy_with_logits,
    aten.logsumexp,
    aten.var,
    aten.std,
    aten.var_mean,
    aten.std_mean,
    aten.native_layer_norm,
    aten.native_layer_norm_backward,
    aten.nll_loss_forward,
    aten.nll_loss_backward,
]


def decomposition_table() -> dict:
    from torch._decomp import get_decompositions

    return get_decompositions(_DECOMPOSE)


# ------------------------------------------------------------- user frames

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_FRONTEND_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB_DIR = sysconfig.get_paths()["stdlib"] + os.sep
_SITE_DIRS = tuple(
    {sysconfig.get_paths()[k] + os.sep for k in ("purelib", "platlib")}
)


def is_user_frame(filename: str) -> bool:
    """Frames of the user's code: not torch, not this frontend, not the stdlib."""
    if filename.startswith("<"):
        # <stdin>, <ipython-input-...> are the user's; <frozen ...>, FX's
        # <eval_with_key> and the <string> code torch generates are not.
        return not filename.startswith(("<frozen", "<eval_with_key", "<string>"))
    path = os.path.abspath(filename)
    if path.startswith(_TORCH_DIR) or path.startswith(_FRONTEND_DIR):
        return False
    if path.startswith(_STDLIB_DIR) and not path.startswith(_SITE_DIRS):
        return False
    for mod in ("functorch", "torchgen", "xdsl"):
        if f"{os.sep}site-packages{os.sep}{mod}{os.sep}" in path:
            return False
    return True


def user_frames(summary: Sequence[traceback.FrameSummary]) -> list[traceback.FrameSummary]:
    """The user's frames *inside* the traced step: below the frontend's own
    frame that calls the step (so the caller of `capture` never counts)."""
    frames = list(summary)
    inner = [i for i, f in enumerate(frames) if os.path.abspath(f.filename).startswith(_FRONTEND_DIR)]
    if inner:
        frames = frames[inner[-1] + 1 :]
    return [f for f in frames if is_user_frame(f.filename)]


def innermost_user_location(summary: Sequence[traceback.FrameSummary]) -> SourceLocation | None:
    frames = user_frames(summary)
    if not frames:
        return None
    f = frames[-1]
    return SourceLocation(f.filename, f.lineno or 0, f.name, (f.line or "").strip())


def _keep_user_frames(self, summary: traceback.StackSummary) -> traceback.StackSummary:
    return traceback.StackSummary.from_list(user_frames(summary))


@contextlib.contextmanager
def _user_stack_traces() -> Iterator[None]:
    """make_fx(record_stack_traces=True) in this torch keeps only frames named
    `forward` (nn.Module code); a functional step has none. Keep the user's
    frames instead, for the duration of one trace."""
    tracer_cls = proxy_tensor.PythonKeyTracer
    had = "_filter_traceback_frames" in tracer_cls.__dict__
    old = tracer_cls.__dict__.get("_filter_traceback_frames")
    tracer_cls._filter_traceback_frames = _keep_user_frames
    try:
        yield
    finally:
        if had:
            tracer_cls._filter_traceback_frames = old
        else:
            del tracer_cls._filter_traceback_frames


# ------------------------------------------------------------ pytree names


def _top_level_names(step: Callable, n: int) -> list[str]:
    """Names of the first n positional arguments of `step`: the parameter name,
    `args[k]` for a `*args` parameter, `[i]` when the signature is unknown."""
    import inspect

    try:
        params = list(inspect.signature(step).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names: list[str] = []
    for i in range(n):
        name = f"[{i}]"
        for j, p in enumerate(params):
            if p.kind == inspect.Parameter.VAR_POSITIONAL and i >= j:
                name = f"{p.name}[{i - j}]"
                break
            if j == i and p.kind in positional:
                name = p.name
                break
        names.append(name)
    return names


def _describe(leaf: Any) -> str:
    if isinstance(leaf, torch.Tensor):
        return f"a {str(leaf.dtype).replace('torch.', '')} tensor"
    return f"{type(leaf).__name__} {leaf!r}" if leaf is None or isinstance(leaf, int | float | bool | str) else type(leaf).__name__


def flatten_args(step: Callable, example_args: tuple) -> tuple[list[torch.Tensor], pytree.TreeSpec, list[str]]:
    path_leaves, in_spec = pytree.tree_flatten_with_path(example_args)
    top = _top_level_names(step, len(example_args))
    leaves, names = [], []
    for path, leaf in path_leaves:
        name = top[path[0].idx] + pytree.keystr(path[1:])
        if not isinstance(leaf, torch.Tensor):
            raise CaptureError(
                f"argument {name} is {_describe(leaf)}, not a tensor: every leaf of example_args must be a "
                "tensor (pass numbers as 0-d tensors, or close over them in the step as constants)"
            )
        if leaf.layout != torch.strided:
            raise CaptureError(f"argument {name} has layout {leaf.layout}; only dense (strided) tensors are supported")
        leaves.append(leaf.detach())
        names.append(name)
    return leaves, in_spec, names


# ------------------------------------------------------------------- trace

_DATA_DEPENDENT = (
    "GuardOnDataDependentSymNode",
    "DataDependentOutputException",
    "DynamicOutputShapeException",
)


def _fake_leaves(leaves: list[torch.Tensor]) -> list[torch.Tensor]:
    """Meta example tensors become fake tensors on the CPU (still no memory).

    Tensors a step creates itself (`torch.randn(8)`, `torch.zeros(...)`)
    default to the CPU; traced against meta arguments they meet them on two
    devices and tracing fails with a device mismatch, where CPU arguments give
    the graph (and then a message naming the op). So meta arguments are traced
    as the CPU tensors they describe.
    """
    if not any(t.device.type == "meta" for t in leaves):
        return leaves
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    mode = FakeTensorMode()
    cpu = torch.device("cpu")
    return [FakeTensor(mode, t, cpu) if t.device.type == "meta" else mode.from_tensor(t) for t in leaves]


def _closed_over_tensor_error(step: Callable, exc: BaseException) -> CaptureError:
    """The step computes with a real tensor that is not one of its arguments."""
    import re

    loc = innermost_user_location(traceback.extract_tb(exc.__traceback__))
    where = f"{loc}: " if loc is not None else ""
    m = re.search(r"Found in ([\w.]+)\(", str(exc))
    op = f" (in {m.group(1)})" if m else ""
    text = (
        f"{where}error: {getattr(step, '__name__', 'step')} uses a tensor that is not one of its arguments{op}: "
        "a tensor closed over from an enclosing scope (a global, a captured variable) cannot be compiled "
        "into the kernel; pass it as part of the state or the batch (example_args), or create it inside "
        "the step"
    )
    if loc is not None and loc.line:
        text += f"\n    {loc.line.strip()}"
    return CaptureError(text)


def trace(step: Callable, example_args: tuple, stack_traces: bool = True):
    """Returns (graph_module, in_spec, out_spec, arg_names, result_names).
    `stack_traces`: record the user's stack on each node (for error messages)."""
    leaves, in_spec, arg_names = flatten_args(step, example_args)
    holder: dict[str, Any] = {}

    def flat_step(*flat: torch.Tensor):
        args = pytree.tree_unflatten(list(flat), in_spec)
        out = step(*args)
        path_leaves, out_spec = pytree.tree_flatten_with_path(out)
        names = []
        for path, leaf in path_leaves:
            name = pytree.keystr(path) or "result"
            if not isinstance(leaf, torch.Tensor):
                raise CaptureError(
                    f"result {name} of {getattr(step, '__name__', 'step')} is {_describe(leaf)}, not a tensor: "
                    "every leaf of the returned pytree must be a tensor"
                )
            names.append(name)
        holder["out_spec"], holder["names"] = out_spec, names
        return [leaf for _, leaf in path_leaves]

    from torch.func import functionalize

    try:
        with _user_stack_traces() if stack_traces else contextlib.nullcontext():
            gm = make_fx(
                functionalize(flat_step, remove="mutations_and_views"),
                tracing_mode="fake",
                decomposition_table=decomposition_table(),
                record_stack_traces=stack_traces,
            )(*_fake_leaves(leaves))
    except CaptureError:
        raise
    except AssertionError as exc:
        if "Please convert all Tensors to FakeTensors" not in str(exc):
            raise
        raise _closed_over_tensor_error(step, exc) from exc
    except Exception as exc:  # noqa: BLE001 - re-raised with the user's line
        loc = innermost_user_location(traceback.extract_tb(exc.__traceback__))
        kind = type(exc).__name__
        if kind in _DATA_DEPENDENT or "data-dependent" in str(exc) or "data dependent" in str(exc):
            op = getattr(exc, "func", None)
            raise UnsupportedOpError(
                str(op) if op is not None else "aten._local_scalar_dense.default",
                loc,
                "data-dependent control flow or value (.item(), `if tensor:`, nonzero, ...): the step must be "
                "static; compute both branches and select arithmetically, or pass the decision as an input",
            ) from exc
        where = f"{loc}: " if loc is not None else ""
        raise CaptureError(f"{where}tracing {getattr(step, '__name__', 'step')} failed: {kind}: {exc}") from exc
    return gm, in_spec, holder["out_spec"], arg_names, holder["names"]
