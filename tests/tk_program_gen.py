"""Hypothesis strategies for random *valid* `tk` programs.

`tk_programs()` draws a `GenProgram`: an xDSL module holding one `func.func`
built from a random DAG of tk ops over small static shapes (rank 0 to 3, sizes
1 to 5) in f32/bf16/f16, plus concrete CPU input tensors for it. The DAG mixes
inputs and constants (rank-0 scalars of any float type, broadcast fills with
"interesting" values: +-0, 1, 2, 0.5, ...), elementwise ops with broadcasting,
pow with special exponents, cast chains (through i1 too), views (reshape,
expand, transpose, slice, chains of them), reductions (sum, mean, max, argmax),
matmul (with transpose flags), addmm, `tk.fused` regions, and duplicated ops,
so that canonicalize, cse, dce and tk-decompose all find work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from trainkernel import elements
from trainkernel.dialects import tk
from trainkernel.elements import torch_dtype

FLOATS: tuple[Attribute, ...] = tuple(e.ir for e in elements.COMPUTE)  # f32, bf16, f16
SPECIAL_VALUES = (0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 3.0, -0.25, 1e-3)
EXPONENTS = (2.0, 1.0, 0.0, 0.5, -1.0, 3.0, 1.5, -2.0)


@dataclass
class GenProgram:
    module: ModuleOp
    args: list[torch.Tensor]

    @property
    def func(self) -> func.FuncOp:
        return next(op for op in self.module.ops if isinstance(op, func.FuncOp))

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        from trainkernel.ir import print_module

        shapes = ", ".join(f"{tuple(a.shape)}:{a.dtype}" for a in self.args)
        return f"GenProgram(args=[{shapes}])\n{print_module(self.module)}"


def _tt(element: Attribute, shape) -> TensorType:
    return TensorType(element, list(shape))


def _is_float_value(v: SSAValue) -> bool:
    return tk.is_float(tk.element_type_of(v))


class _Builder:
    """Builds one function op by op, drawing choices from hypothesis."""

    def __init__(self, draw, max_ops: int, addmm: bool = True):
        self.draw = draw
        self.max_ops = max_ops
        self.allow_addmm = addmm
        self.arg_types: list[TensorType] = []
        self.block = Block()
        self.values: list[SSAValue] = []  # float tensors usable as operands
        self.others: list[SSAValue] = []  # non-float results (argmax): returned only

    # -------------------------------------------------------------- choices

    def choice(self, seq):
        return self.draw(st.sampled_from(list(seq)))

    def flip(self, p_true: float = 0.5) -> bool:
        # integers() shrinks towards False.
        return self.draw(st.integers(0, 999)) < int(p_true * 1000)

    def shape(self, max_rank: int = 3) -> tuple[int, ...]:
        rank = self.draw(st.integers(0, max_rank))
        return tuple(self.draw(st.integers(1, 5)) for _ in range(rank))

    def value_of(self, pred=lambda v: True) -> SSAValue | None:
        pool = [v for v in self.values if pred(v)]
        return self.choice(pool) if pool else None

    # ------------------------------------------------------------- creation

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        for r in op.results:
            (self.values if _is_float_value(r) else self.others).append(r)
        return op

    def new_arg(self, t: TensorType) -> SSAValue:
        arg = self.block.insert_arg(t, len(self.block.args))
        self.arg_types.append(t)
        self.values.append(arg)
        return arg

    def fill_value(self) -> float:
        if self.flip(0.6):
            return self.choice(SPECIAL_VALUES)
        return float(self.draw(st.floats(-4.0, 4.0, allow_nan=False, width=32)))

    def new_fill(self, t: TensorType) -> SSAValue:
        return self.add(tk.FillOp(self.fill_value(), t)).results[0]

    def operand(self, t: TensorType, p_fill: float = 0.3) -> SSAValue:
        """An existing value of type `t`, or a new fill or input of that type."""
        if self.flip(0.6):
            v = self.value_of(lambda v: v.type == t)
            if v is not None:
                return v
        if self.flip(p_fill):
            return self.new_fill(t)
        return self.new_arg(t)

    # --------------------------------------------------------------- op kinds

    def gen_fill(self):
        self.new_fill(_tt(self.choice(FLOATS), self.shape()))

    def _broadcast_partner(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        k = self.draw(st.integers(0, len(shape)))
        suffix = shape[len(shape) - k :]
        return tuple(1 if (d != 1 and self.flip(0.3)) else d for d in suffix)

    def gen_binary(self, cls=None):
        cls = cls or self.choice([tk.AddOp, tk.SubOp, tk.MulOp, tk.DivOp, tk.MaximumOp])
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        sx, ex = tk.shape_of(x), tk.element_type_of(x)
        if self.flip(0.3):
            # A rank-0 scalar of any float type (a wrapped number for the op).
            other_t = _tt(self.choice(FLOATS), ())
            if not sx:
                # Two scalars: the result takes one operand's type.
                result_el = self.choice([ex, other_t.get_element_type()])
            else:
                result_el = ex
        else:
            other_t = _tt(ex, self._broadcast_partner(sx))
            result_el = ex
        y = self.operand(other_t, p_fill=0.5)
        lhs, rhs = (x, y) if self.flip() else (y, x)
        out = tk.broadcast_shapes(tk.shape_of(lhs), tk.shape_of(rhs))
        self.add(cls(lhs, rhs, _tt(result_el, out)))

    def gen_identity(self):
        """Ops that canonicalize may (or must not) fold: x op c for c in +-0 and 1
        (rank 0 of any float type, or broadcast), maximum(x, x), neg(neg(x))."""
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        sx, ex = tk.shape_of(x), tk.element_type_of(x)
        kind = self.choice(["const", "const", "const", "max", "negneg"])
        if kind == "max":
            self.add(tk.MaximumOp(x, x, x.type))
            return
        if kind == "negneg":
            self.add(tk.NegOp(self.add(tk.NegOp(x)).results[0]))
            return
        cls = self.choice([tk.AddOp, tk.SubOp, tk.MulOp, tk.DivOp])
        if self.flip(0.5):
            c_type = _tt(self.choice(FLOATS), ())
        else:
            c_type = _tt(ex, self._broadcast_partner(sx))
        c = self.add(tk.FillOp(self.choice([0.0, -0.0, 1.0]), c_type)).results[0]
        if not sx and c_type.get_element_type() != ex and self.flip(0.3):
            result_el = c_type.get_element_type()  # both scalars: the type changes
        else:
            result_el = ex
        lhs, rhs = (x, c) if self.flip(0.7) else (c, x)
        self.add(cls(lhs, rhs, _tt(result_el, tk.broadcast_shapes(sx, tk.shape_of(c)))))

    def gen_unary(self):
        cls = self.choice([tk.NegOp, tk.ReluOp, tk.ExpOp, tk.LogOp, tk.SqrtOp])
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        if cls is tk.NegOp and self.flip(0.3):
            x = self.add(tk.NegOp(x)).results[0]
        self.add(cls(x))

    def gen_relu_grad(self):
        g = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        out = self.operand(g.type, p_fill=0.2)
        if self.flip(0.5):
            out = self.add(tk.ReluOp(out)).results[0]
        self.add(tk.ReluGradOp(g, out))

    def gen_activation(self):
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        kind = self.choice(["unary", "param", "grad"])
        if kind == "unary":
            cls = self.choice([tk.TanhOp, tk.SigmoidOp, tk.SiluOp, tk.AbsOp, tk.SignOp, tk.RsqrtOp])
            self.add(cls(x))
            return
        params = {
            tk.GeluOp: {"tanh": self.flip()},
            tk.SoftplusOp: {"beta": self.choice([1.0, 2.0]), "threshold": self.choice([20.0, 1.0])},
            tk.LeakyReluOp: {"negative_slope": self.choice([0.01, 0.2])},
            tk.EluOp: {"alpha": self.choice([1.0, 0.5]), "scale": self.choice([1.0, 1.5]), "input_scale": 1.0},
        }
        if kind == "param":
            cls = self.choice(list(params))
            self.add(cls(x, **params[cls]))
            return
        grads = {
            tk.TanhGradOp: {},
            tk.SigmoidGradOp: {},
            tk.GeluGradOp: params[tk.GeluOp],
            tk.SoftplusGradOp: params[tk.SoftplusOp],
            tk.LeakyReluGradOp: params[tk.LeakyReluOp],
            tk.EluGradOp: {**params[tk.EluOp], "is_result": self.flip()},
        }
        cls = self.choice(list(grads))
        self.add(cls(x, self.operand(x.type, p_fill=0.2), **grads[cls]))

    def gen_mask(self):
        """A comparison, maybe combined with another (a select of masks), choosing
        between two values; sometimes the mask is cast to a float type."""
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        shape = tk.shape_of(x)
        other = self.operand(_tt(tk.element_type_of(x), self._broadcast_partner(shape)), p_fill=0.5)
        m = self.add(tk.CmpOp(self.choice(tk.CMP_PREDICATES), x, other)).results[0]
        if self.flip(0.4):
            m2 = self.add(tk.CmpOp(self.choice(tk.CMP_PREDICATES), x, x)).results[0]
            b = self.add(tk.FillOp(float(self.flip()), _tt(i1, ()))).results[0]
            m2 = self.add(tk.SelectOp(m2, b, m2, m2.type)).results[0]
            m = self.add(tk.SelectOp(m, m2, b, _tt(i1, tk.shape_of(m)))).results[0]
        if self.flip(0.3):
            self.add(tk.CastOp(m, _tt(self.choice(FLOATS), tk.shape_of(m))))
            return
        y = self.operand(x.type, p_fill=0.4)
        rshape = tk.broadcast_shapes(tk.shape_of(m), shape, tk.shape_of(y))
        self.add(tk.SelectOp(m, x, y, _tt(tk.element_type_of(x), rshape)))

    def gen_pow(self):
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        self.add(tk.PowOp(x, self.choice(EXPONENTS)))

    def gen_cast(self):
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        shape = tk.shape_of(x)
        if self.flip(0.15):
            # Through i1 (x != 0) and back to a float type.
            b = self.add(tk.CastOp(x, _tt(i1, shape))).results[0]
            self.add(tk.CastOp(b, _tt(self.choice(FLOATS), shape)))
            return
        mid = f32 if self.flip(0.4) else self.choice(FLOATS)  # f32: often an exact widening
        c = self.add(tk.CastOp(x, _tt(mid, shape))).results[0]
        if self.flip(0.5):
            self.add(tk.CastOp(c, _tt(self.choice(FLOATS), shape)))

    def _matrix(self) -> SSAValue:
        v = self.value_of(lambda v: len(tk.shape_of(v)) == 2)
        if v is None:
            v = self.new_arg(_tt(self.choice(FLOATS), (self.draw(st.integers(1, 5)), self.draw(st.integers(1, 5)))))
        return v

    def gen_matmul(self):
        a = self._matrix()
        if self.flip(0.3):  # a transposed view as operand: canonicalize absorbs it
            a = self.add(tk.TransposeOp(a, [1, 0])).results[0]
        et = tk.element_type_of(a)
        ta = self.flip(0.3)
        m, k = tuple(reversed(tk.shape_of(a))) if ta else tk.shape_of(a)
        tb = self.flip(0.3)
        n = self.draw(st.integers(1, 5))
        b_shape = (n, k) if tb else (k, n)
        pool = [v for v in self.values if v.type == _tt(et, b_shape)]
        b = self.choice(pool) if pool and self.flip(0.5) else self.new_arg(_tt(et, b_shape))
        if self.flip(0.3):
            b = self.add(tk.TransposeOp(b, [1, 0])).results[0]
            tb = not tb
        self.add(tk.MatmulOp(a, b, _tt(et, (m, n)), ta, tb))

    def gen_addmm(self):
        a = self._matrix()
        et = tk.element_type_of(a)
        m, k = tk.shape_of(a)
        n = self.draw(st.integers(1, 5))
        b = self.operand(_tt(et, (k, n)), p_fill=0.1)
        bias_shape = self.choice([(n,), (1, n), (m, n), (m, 1), ()])
        bias = self.operand(_tt(et, bias_shape), p_fill=0.2)
        self.add(tk.AddmmOp(bias, a, b, _tt(et, (m, n))))

    def gen_reduction(self):
        cls = self.choice([tk.SumOp, tk.MeanOp, tk.MaxOp, tk.ArgmaxOp])
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        shape = tk.shape_of(x)
        if cls is tk.ArgmaxOp:
            if not shape:
                return
            axes = [self.draw(st.integers(0, len(shape) - 1))]
        else:
            axes = [a for a in range(len(shape)) if self.flip(0.6)]
        keepdim = self.flip(0.3)
        out_shape = [1 if (i in axes) else d for i, d in enumerate(shape) if keepdim or i not in axes]
        et = i64 if cls is tk.ArgmaxOp else tk.element_type_of(x)
        self.add(cls(x, axes, _tt(et, out_shape), keepdim))

    def _factor_shape(self, n: int) -> tuple[int, ...]:
        factors = []
        m, p = n, 2
        while m > 1:
            while m % p == 0:
                factors.append(p)
                m //= p
            p += 1
        rank = self.draw(st.integers(0 if n == 1 else 1, 3))
        dims = [1] * rank
        for f in factors:
            dims[self.draw(st.integers(0, rank - 1))] *= f
        return tuple(dims)

    def gen_reshape(self):
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        n = math.prod(tk.shape_of(x))
        for _ in range(1 + self.flip(0.3)):
            x = self.add(tk.ReshapeOp(x, _tt(tk.element_type_of(x), self._factor_shape(n)))).results[0]

    def gen_expand(self):
        x = self.value_of(lambda v: len(tk.shape_of(v)) < 3) or self.new_arg(_tt(self.choice(FLOATS), self.shape(2)))
        for _ in range(1 + self.flip(0.3)):
            src = tk.shape_of(x)
            lead = self.draw(st.integers(0, 3 - len(src))) if len(src) < 3 else 0
            dst = tuple(self.draw(st.integers(1, 4)) for _ in range(lead)) + tuple(
                self.draw(st.integers(1, 4)) if d == 1 else d for d in src
            )
            x = self.add(tk.ExpandOp(x, _tt(tk.element_type_of(x), dst))).results[0]

    def gen_transpose(self):
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        for _ in range(1 + self.flip(0.4)):
            perm = self.draw(st.permutations(list(range(len(tk.shape_of(x))))))
            x = self.add(tk.TransposeOp(x, perm)).results[0]

    def gen_slice(self):
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        starts, steps, sizes = [], [], []
        for d in tk.shape_of(x):
            start = self.draw(st.integers(0, d - 1))
            step = self.draw(st.integers(1, 2))
            size = self.draw(st.integers(1, (d - 1 - start) // step + 1))
            starts.append(start)
            steps.append(step)
            sizes.append(size)
        self.add(tk.SliceOp(x, starts, steps, _tt(tk.element_type_of(x), sizes)))

    def gen_fused(self):
        x = self.value_of() or self.new_arg(_tt(self.choice(FLOATS), self.shape()))
        inputs = [x]
        y = self.value_of(lambda v: v.type == x.type)
        if y is not None and y is not x and self.flip():
            inputs.append(y)
        body = Block(arg_types=[v.type for v in inputs])
        inner = list(body.args)
        for _ in range(self.draw(st.integers(1, 3))):
            kind = self.choice(["unary", "binary", "scalar", "pow"])
            a = self.choice(inner)
            if kind == "unary":
                op = self.choice([tk.NegOp, tk.ReluOp, tk.ExpOp, tk.SqrtOp])(a)
            elif kind == "binary":
                op = self.choice([tk.AddOp, tk.MulOp, tk.SubOp, tk.MaximumOp])(a, self.choice(inner), a.type)
            elif kind == "pow":
                op = tk.PowOp(a, self.choice(EXPONENTS))
            else:
                c = tk.FillOp(self.fill_value(), _tt(self.choice(FLOATS), ()))
                body.add_op(c)
                op = self.choice([tk.AddOp, tk.MulOp, tk.DivOp])(a, c, a.type)
            body.add_op(op)
            inner.append(op.results[0])
        outs = [inner[-1]]
        if len(inner) > 2 and self.flip(0.3):
            outs.append(inner[-2])
        body.add_op(tk.YieldOp(*outs))
        self.add(tk.FusedOp(inputs, [v.type for v in outs], Region(body)))

    def gen_duplicate(self):
        # Clone an earlier op on the same operands: work for cse.
        ops = [op for op in self.block.ops if not isinstance(op, tk.FusedOp)]
        if not ops:
            return
        self.add(self.choice(ops).clone())

    KINDS = (
        ("fill", 1),
        ("binary", 6),
        ("identity", 2),
        ("unary", 2),
        ("relu_grad", 1),
        ("activation", 2),
        ("mask", 2),
        ("pow", 2),
        ("cast", 2),
        ("matmul", 2),
        ("addmm", 1),
        ("reduction", 2),
        ("reshape", 1),
        ("expand", 1),
        ("transpose", 1),
        ("slice", 1),
        ("fused", 1),
        ("duplicate", 1),
    )

    def build(self) -> ModuleOp:
        kinds = [k for k, w in self.KINDS for _ in range(w) if k != "addmm" or self.allow_addmm]
        n_ops = self.draw(st.integers(1, self.max_ops))
        for _ in range(n_ops):
            getattr(self, "gen_" + self.choice(kinds))()
        if not self.values and not self.others:
            self.new_arg(_tt(f32, (2,)))
        candidates = self.values + self.others
        results = [candidates[-1]]
        for _ in range(self.draw(st.integers(0, 2))):
            v = self.choice(candidates)
            if v not in results:
                results.append(v)
        self.block.add_op(func.ReturnOp(*results))
        fn = func.FuncOp(
            "main",
            ([a.type for a in self.block.args], [r.type for r in results]),
            Region(self.block),
        )
        module = ModuleOp([fn])
        module.verify()
        return module


def random_tensor(t: TensorType, gen: torch.Generator) -> torch.Tensor:
    """Values for an input: normal, sometimes scaled, with zeros, -0.0 and
    negatives (NaN through log/sqrt is allowed: comparisons treat NaN == NaN)."""
    shape = tuple(t.get_shape())
    dtype = torch_dtype(t)
    x = torch.randn(shape, generator=gen, dtype=torch.float32) * 2.0
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5])
    mask = torch.rand(shape, generator=gen) < 0.1
    pick = torch.randint(0, len(special), shape, generator=gen)
    x = torch.where(mask, special[pick], x)
    return x.to(dtype)


@st.composite
def tk_programs(draw, max_ops: int = 10, addmm: bool = True) -> GenProgram:
    """A random program of 1..max_ops generated steps. `addmm=False` leaves out
    tk.addmm, whose decomposition is exact only up to f32 reassociation."""
    builder = _Builder(draw, max_ops, addmm)
    module = builder.build()
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    args = [random_tensor(t, gen) for t in builder.arg_types]
    return GenProgram(module, args)


@st.composite
def addmm_programs(draw) -> GenProgram:
    """One tk.addmm (all bias shapes, f32/bf16/f16, K up to 64) returning its result."""
    et = draw(st.sampled_from(FLOATS))
    m, n = draw(st.integers(1, 8)), draw(st.integers(1, 8))
    k = draw(st.sampled_from([1, 2, 3, 5, 8, 17, 64]))
    bias_shape = draw(st.sampled_from([(n,), (1, n), (m, n), (m, 1), ()]))
    block = Block(arg_types=[_tt(et, bias_shape), _tt(et, (m, k)), _tt(et, (k, n))])
    op = tk.AddmmOp(*block.args, _tt(et, (m, n)))
    block.add_ops([op, func.ReturnOp(op.result)])
    fn = func.FuncOp("main", ([a.type for a in block.args], [op.result.type]), Region(block))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    module = ModuleOp([fn])
    module.verify()
    return GenProgram(module, [random_tensor(a.type, gen) for a in block.args])


__all__ = ["GenProgram", "tk_programs", "addmm_programs", "random_tensor", "FLOATS"]
