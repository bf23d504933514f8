"""`tk-mark-state-updates{state=N}`: mark which results are the new state.

`compile_training`'s convention: the step's first argument is the state (a
pytree of N tensors, the first N function arguments) and the last element of
the tuple it returns is the updated state, with the same structure (the last N
results). This pass writes that down in the IR: result `n_results - N + k`
gets `tk.updates = k`, the argument it replaces. `tk-to-sched{inplace=true}`
then computes it into argument k's buffer (or stages it and commits it there).

The count comes from the pipeline (`trainkernel.pipeline.pass_pipeline(...,
state=N)`, the number of leaves of the first argument), so `trainkernel-opt
-p "$PIPELINE"` on the captured text does exactly what `compile_training` does.
`state=0` (the default) marks nothing. The structure itself (that the new
state mirrors the state) is checked before lowering, on the pytrees, by
`trainkernel.pipeline.state_leaves` and `compile_training`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

UPDATES_ATTR = "tk.updates"


def mark_state_updates(f: func.FuncOp, state: int) -> None:
    n_args = len(f.function_type.inputs.data)
    n_out = len(f.function_type.outputs.data)
    if state < 0 or state > n_args or state > n_out:
        raise DiagnosticException(
            f"tk-mark-state-updates: state={state} but @{f.sym_name.data} has {n_args} arguments and {n_out} results"
        )
    if state == 0:
        return
    attrs = list(f.res_attrs.data) if f.res_attrs is not None else [DictionaryAttr({}) for _ in range(n_out)]
    for k in range(state):
        r = n_out - state + k
        d = dict(attrs[r].data)
        d[UPDATES_ATTR] = IntegerAttr(k, i64)
        attrs[r] = DictionaryAttr(d)
    f.res_attrs = builtin.ArrayAttr(attrs)


@dataclass(frozen=True)
class TkMarkStateUpdatesPass(ModulePass):
    """Mark the last `state` results of every func.func as the new values of its
    first `state` arguments (`tk.updates = k`)."""

    name = "tk-mark-state-updates"

    state: int = 0

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for f in op.ops:
            if isinstance(f, func.FuncOp):
                mark_state_updates(f, self.state)
