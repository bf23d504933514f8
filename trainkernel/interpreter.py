"""CPU reference interpreter for TrainKernel IR: the numeric oracle.

`interpret(program, *args)` runs a `tk`-level function on CPU with PyTorch and
returns what the program computes:

- `program` a `Captured` step (anything with `.module`, `.func`, `.in_spec`,
  `.out_spec`): `args` are the step's own pytree arguments; they are flattened
  with `torch.utils._pytree` and the result is unflattened with `out_spec`, so
  `interpret(captured, *args)` returns the same pytree as `step(*args)`.
- `program` an xDSL `ModuleOp` (holding one `func.func`, or pick one with
  `func_name=`) or a `func.func`: `args` are flat tensors, one per function
  argument; the result is a tuple of tensors.

Tensors on any device are moved to CPU; their dtypes and shapes must match the
function's argument types exactly (no silent conversion).

The numerics (every op's PyTorch implementation, and the engine that runs a
block of ops) are in `trainkernel.numerics`; this module is the front door.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from trainkernel.numerics import DEFAULT, Interpreter, InterpreterError


# ------------------------------------------------------------------ front door


def _find_function(module: ModuleOp, name: str | None) -> func.FuncOp:
    funcs = [op for op in module.walk() if isinstance(op, func.FuncOp) and op.body.blocks]
    if name is not None:
        for f in funcs:
            if f.sym_name.data == name:
                return f
        raise InterpreterError(f"module has no function @{name}")
    if len(funcs) != 1:
        names = ", ".join("@" + f.sym_name.data for f in funcs) or "none"
        raise InterpreterError(f"module must hold exactly one function to interpret (found {names}); pass func_name=")
    return funcs[0]


def _is_captured(program: Any) -> bool:
    return all(hasattr(program, a) for a in ("module", "func", "in_spec", "out_spec"))


def interpret(program: Any, *args: Any, func_name: str | None = None, interpreter: Interpreter | None = None):
    """Run `program` on CPU; see the module docstring for what `program` and
    `args` may be and what comes back."""
    from torch.utils import _pytree as pytree

    interp = interpreter or DEFAULT
    if _is_captured(program):
        flat, spec = pytree.tree_flatten(args)
        in_spec = program.in_spec
        if in_spec is not None and spec != in_spec:
            raise InterpreterError(
                f"arguments do not have the structure the step was captured with:\n"
                f"  captured: {in_spec}\n  given:    {spec}"
            )
        fn = program.func
        results = interp.run_function(fn, flat)
        if program.out_spec is None:
            return results
        return pytree.tree_unflatten(list(results), program.out_spec)
    if isinstance(program, ModuleOp):
        from trainkernel.dialects.sched import ProgramLikeOp

        if any(isinstance(op, ProgramLikeOp) for op in program.ops):
            # Buffer levels (sched.program, tile.kernel): real arena, phase semantics.
            from trainkernel.sched_interpreter import run_program

            return run_program(program, list(args))
        return interp.run_function(_find_function(program, func_name), list(args))
    from trainkernel.dialects.sched import ProgramLikeOp

    if isinstance(program, ProgramLikeOp):
        from trainkernel.sched_interpreter import run_program

        return run_program(program, list(args))
    if isinstance(program, func.FuncOp):
        return interp.run_function(program, list(args))
    raise InterpreterError(
        "interpret() takes a Captured step, an xDSL ModuleOp, a func.func, a sched.program or a tile.kernel, "
        f"not {type(program).__name__}"
    )

