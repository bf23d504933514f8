"""Activations, comparisons and masks, each with its backward, against eager.

Op level: for every activation (and the mask-based ops: clamp, maximum, where,
masked_fill, hardtanh, amax; and cat, stack, slice, select and split, whose
backward places a gradient in a larger tensor), `torch.func.vjp` of the op on values that cover
every branch of its formula (both signs, +-0, the thresholds, large
magnitudes, inf and NaN) is captured and run by the CPU interpreter at the tk
level and, after the whole compile pipeline, at the sched and tile levels; the
value and the gradient must be bit-identical to eager PyTorch in f32, bf16 and
f16 (NaN == NaN).

Training level: a 2-layer MLP with the activation in its hidden layer, trained
by SGD for 5 steps from the same start, each level feeding back its own
parameters: every loss, gradient and parameter bit-identical to eager.

Why bit-identical is the right bar: each tk op runs the aten op eager runs
(`aten.gelu`, `aten.gelu_backward`, ...) on the same dtypes, and a comparison
or select is exact; tk-legalize-masks only changes how a mask is stored (0/1
floats), which is exact too.

CUDA: the kernel of a step that uses every op is printed and compiled by nvcc
for sm_90 (f32 and bf16, grid and resident kernels).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch.func import grad_and_value, vjp
from torch.utils import _pytree as pytree
from xdsl.dialects import func

import trainkernel
from trainkernel.frontend.errors import UnsupportedOpError
from trainkernel.dialects import sched
from trainkernel.pipeline import lower, run_passes, stage_passes, state_leaves
from trainkernel.sched_interpreter import run_program

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}

OPS = {
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "silu": F.silu,
    "gelu": F.gelu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "softplus": F.softplus,
    "softplus_beta": lambda t: F.softplus(t, beta=2.0, threshold=1.0),
    "leaky_relu": lambda t: F.leaky_relu(t, 0.1),
    "elu": F.elu,
    "selu": F.selu,
    "celu": lambda t: F.celu(t, alpha=0.5),
    "abs": torch.abs,
    "sign": torch.sign,
    "rsqrt": torch.rsqrt,
    "hardtanh": F.hardtanh,
    "relu6": F.relu6,
    "clamp": lambda t: t.clamp(-0.5, 2.0),
    "maximum": lambda t: torch.maximum(t, 0.5 * t),
    "minimum": lambda t: torch.minimum(t, t * t),
    "where": lambda t: torch.where(t > 0, t, 0.1 * t),
    "masked_fill": lambda t: t.masked_fill(t < -0.5, 0.25),
    "logical": lambda t: torch.where(torch.logical_and(t > -1, ~(t > 1)) | (t == 0), t * 3, t),
    "mask_arith": lambda t: t * (t > 0).to(t.dtype) + (t <= 0).float().to(t.dtype),
    "amax": lambda t: t.amax(dim=-1, keepdim=True) * t,
}

# Placement (cat, stack, and the backward of slice/select/split): shape-preserving
# compositions, so they also serve as a hidden layer's activation below (and on
# the GPU: tests/test_train_cuda.py).
PLACEMENT = {
    "cat": lambda t: torch.cat([t[:, :3], t[:, 3:].tanh()], dim=-1),
    "cat_rows": lambda t: torch.cat([t[1:], t[:1] * 2], dim=0),
    "stack": lambda t: torch.stack([t, -0.5 * t], dim=-1).amax(dim=-1),
    "slice_step": lambda t: torch.cat([t[:, ::2], t[:, 1::2] * 3], dim=-1),
    "select": lambda t: t * t.select(-1, 2).unsqueeze(-1),
    "split": lambda t: torch.cat([p * (k + 1) for k, p in enumerate(t.split(3, dim=-1))], dim=-1),
}
OPS.update(PLACEMENT)

# Values covering every branch (and the special cases) of the formulas.
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 0.25, 3.0, -3.0, 10.0, -10.0, 25.0, -25.0,
           float("inf"), float("-inf"), float("nan"), 1e-3, -1e-3, 6.0, 6.5, 0.125, -0.75]


# hardtanh_backward at a NaN input: PyTorch's CUDA kernel and CPU scalar loop pass
# the gradient (`x <= min || x >= max ? 0 : grad`), its CPU vector loop gives 0
# (`min < x && x < max ? grad : 0`); which one eager CPU runs depends on the
# tensor's length. tk follows the CUDA kernel (docs/ir/tk.md), so NaN is left
# out of these two ops' values.
NO_NAN = {"hardtanh", "relu6"}


def _values(dtype, n=64, seed=0, nan=True):
    g = torch.Generator().manual_seed(seed)
    special = [v for v in SPECIAL if nan or v == v]
    rand = torch.randn(n - len(special), generator=g) * 3
    return torch.cat([torch.tensor(special), rand]).reshape(8, n // 8).to(dtype)


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    same = (a == b) & (torch.signbit(a) == torch.signbit(b))
    return bool((same | (a.isnan() & b.isnan())).all())


def _assert_same(got, want, what):
    g, w = pytree.tree_leaves(got), pytree.tree_leaves(want)
    assert len(g) == len(w), what
    for k, (a, b) in enumerate(zip(g, w)):
        if not _bits_equal(a, b):
            bad = (a.double() - b.double()).abs().nan_to_num(nan=float("inf"))
            pytest.fail(f"{what}, result {k}: differs from eager (max |diff| {bad.max().item():g})\n{a}\n{b}")


def _levels(captured, inplace=False):
    module = captured.module.clone()
    state = state_leaves(captured)
    out = {}
    for stage in ("tk", "sched", "tile"):
        run_passes(module, stage_passes(stage, inplace, state=state))
        out[stage] = next(op for op in module.clone().ops if isinstance(op, sched.ProgramLikeOp)) if stage != "tk" else None
    return out


def _op_step(fn):
    def step(x, g):
        out, pull = vjp(fn, x)
        return out, pull(g)[0], x  # the last result is the (unchanged) "state"

    return step


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(OPS))
def test_op_and_backward_match_eager(name, dtype):
    step = _op_step(OPS[name])
    x = _values(DTYPES[dtype], nan=name not in NO_NAN)
    g = _values(DTYPES[dtype], seed=1).nan_to_num(nan=1.0, posinf=2.0, neginf=-2.0)
    captured = trainkernel.capture(step, (x, g))
    want = step(x, g)
    _assert_same(trainkernel.interpret(captured, x, g), want, "tk level")
    for level, program in _levels(captured).items():
        if program is not None:
            _assert_same(run_program(program, [x, g]), want, f"{level} level")


def _mlp_step(act, dtype, lr=0.05):
    def loss_fn(params, x, y):
        w1, b1, w2, b2 = (p.to(dtype) for p in params)
        h = act(x @ w1 + b1)
        return ((h @ w2 + b2).float() - y).pow(2).mean()

    def step(params, x, y):
        grads, loss = grad_and_value(loss_fn)(params, x, y)
        return loss, grads, tuple(p - lr * g for p, g in zip(params, grads))

    return step


def _mlp_state(seed=0, sizes=(12, 16, 4)):
    g = torch.Generator().manual_seed(seed)
    i, h, o = sizes
    return tuple(torch.randn(s, generator=g) * 0.5 for s in [(i, h), (h,), (h, o), (o,)])


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("name", list(OPS))
def test_mlp_training_matches_eager(name, dtype):
    dt = DTYPES[dtype]
    step = _mlp_step(OPS[name] if name != "rsqrt" else (lambda t: torch.rsqrt(t.abs() + 0.5)), dt)
    params = _mlp_state()
    gen = torch.Generator().manual_seed(3)
    batches = [(torch.randn(8, 12, generator=gen).to(dt), torch.randn(8, 4, generator=gen)) for _ in range(5)]
    captured = trainkernel.capture(step, (params, *batches[0]))
    levels = {k: v for k, v in _levels(captured, inplace=True).items() if v is not None}
    state = {"eager": params, "tk": params, **{k: params for k in levels}}
    for t, (x, y) in enumerate(batches):
        want = step(state["eager"], x, y)
        got = trainkernel.interpret(captured, state["tk"], x, y)
        _assert_same(got, want, f"step {t}, tk level")
        state["tk"] = got[-1]
        for level, program in levels.items():
            out = run_program(program, pytree.tree_leaves((state[level], x, y)))
            _assert_same(out, want, f"step {t}, {level} level")
            state[level] = tuple(out[-4:])
        state["eager"] = want[-1]


def test_a_placement_past_exact_float_indices_names_the_op_and_line():
    """Placement computes column positions in f32: past 2**24 it refuses, naming aten.cat and the user's line."""
    def step(a, b):
        return torch.cat([a, b], dim=1), a

    a, b = torch.empty(2, 2**23, device="meta"), torch.empty(2, 2**23 + 8, device="meta")
    with pytest.raises(UnsupportedOpError, match=r"test_activations.py:\d+: error: unsupported op aten.cat.default: "
                                                 r"placing .* positions past 2\*\*24"):
        trainkernel.capture(step, (a, b))


def test_bool_results_and_arguments_keep_their_type():
    """A step may take a bool mask and return one: the boundaries stay bool
    (tk-legalize-masks converts at the edges only)."""

    def step(x, done):
        keep = ~done & (x > 0)
        return x.masked_fill(done, 0.0) * 2, keep, x

    x = _values(torch.float32)
    done = x.abs() > 1
    captured = trainkernel.capture(step, (x, done))
    want = step(x, done)
    _assert_same(trainkernel.interpret(captured, x, done), want, "tk level")
    for level, program in _levels(captured).items():
        if program is not None:
            _assert_same(run_program(program, [x, done]), want, f"{level} level")


def test_count_of_a_mask_stands_in_for_int64():
    def step(x):
        n = (x > 0).sum(dim=1, keepdim=True)  # int64 in PyTorch
        return x / n, n, x

    x = torch.randn(4, 6).abs() + 0.1
    captured = trainkernel.capture(step, (x,))
    got, want = trainkernel.interpret(captured, x), step(x)
    _assert_same(got, want, "tk level")
    assert got[1].dtype == torch.int64


@pytest.mark.parametrize(
    "fn",
    [
        lambda x, i: (x, i == 3, x),
        lambda x, i: (torch.where(i > 0, x, x * 2), x),
    ],
    ids=["eq", "where-gt"],
)
def test_int64_comparisons_capture_and_match_eager(fn):
    """Comparisons of int64 values (class labels) are supported since tk.cmp takes i64."""
    x, i = torch.randn(4), torch.arange(4)
    captured = trainkernel.capture(fn, (x, i))
    _assert_same(trainkernel.interpret(captured, x, i), fn(x, i), "tk level")


@pytest.mark.parametrize(
    "fn, op, message",
    [
        (lambda x, i: (x, i + 1, x), "aten.add.Tensor", "computes on tensor<4xi64>"),
        (lambda x, i: (torch.where(i * 2 > 3, x, x * 2), x), "aten.mul.Tensor", "computes on tensor<4xi64>"),
    ],
)
def test_integer_arithmetic_names_op_and_line(fn, op, message):
    """Integer labels may be compared and selected, not computed with."""
    x, i = torch.randn(4), torch.arange(4)
    with pytest.raises(UnsupportedOpError, match=rf"test_activations.py:\d+: error: unsupported op {op}: {message}"):
        trainkernel.capture(fn, (x, i))


def test_int64_comparisons_and_where_match_eager():
    def step(x, i):
        keep = (i != 2) & (i >= 1)
        j = torch.where(keep, i, 0)
        return x * keep.to(x.dtype), j, j == torch.arange(4), x

    x, i = torch.randn(4), torch.tensor([0, 1, 2, 3])
    captured = trainkernel.capture(step, (x, i))
    _assert_same(trainkernel.interpret(captured, x, i), step(x, i), "tk level")
    for level, program in _levels(captured).items():
        if program is not None:
            _assert_same(run_program(program, [x, i]), step(x, i), f"{level} level")


# ------------------------------------------------------------------- CUDA

NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").is_file() else None)
INCLUDE = Path(trainkernel.__file__).resolve().parent / "backend" / "include"


def _everything(h):
    acts = [fn for name, fn in OPS.items() if name not in ("rsqrt", "amax")]
    out = torch.rsqrt(h.abs() + 1)
    for fn in acts:
        out = out + fn(h)
    return out


def _everything_step(dt):
    return _mlp_step(_everything, dt)


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("dtype, resident", [("bf16", "off"), ("f32", "force")])
def test_kernel_with_every_op_compiles(dtype, resident, tmp_path):
    dt = DTYPES[dtype]
    params = tuple(t.to("meta") for t in _mlp_state(sizes=(16, 32, 8)))
    x, y = torch.empty(8, 16, dtype=dt, device="meta"), torch.empty(8, 8, device="meta")
    captured = trainkernel.capture(_everything_step(dt), (params, x, y))
    low = lower(captured, True, resident=resident)
    for c in ("tanhf(", "erff(", "log1pf(", "expm1f(", "rsqrtf(", "fabsf(", "? 1.0f : 0.0f"):
        assert c in low.cuda_source, c
    src = tmp_path / "k.cu"
    src.write_text(low.cuda_source)
    cmd = [NVCC, "-std=c++17", "-arch=sm_90", "-O3", "--shared", "-Xcompiler", "-fPIC", "-I", str(INCLUDE),
           str(src), "-o", str(tmp_path / "k.so")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-4000:]


def test_every_op_is_exercised_by_the_kernel_test():
    """The step compiled above reaches every pointwise tk op."""
    from trainkernel.backend.cuda_target import EXPR, EXPR_AT
    from trainkernel.dialects import tk

    params = tuple(t.to("meta") for t in _mlp_state(sizes=(16, 32, 8)))
    x, y = torch.empty(8, 16, device="meta"), torch.empty(8, 8, device="meta")
    captured = trainkernel.capture(_everything_step(torch.float32), (params, x, y))
    seen = {type(op) for op in captured.module.walk()}
    want = set(tk.ACTIVATION_OPS) | {tk.CmpOp, tk.SelectOp}
    assert want <= seen, sorted(c.name for c in want - seen)
    assert set(tk.ELEMENTWISE_OPS) <= set(EXPR) | set(EXPR_AT)


@pytest.mark.parametrize("name", ["gelu_tanh", "where", "leaky_relu", "clamp"])
def test_resident_partition_with_activations(name):
    """The online-sized MLP with an activation becomes a resident kernel of 16
    blocks: run block by block (each block sees only the slices it holds), it
    reads nothing it does not hold and gives the unpartitioned result."""
    from trainkernel.dialects import tile
    from trainkernel.ir import parse_module
    from trainkernel import sched_interpreter

    dt = torch.bfloat16
    step = _mlp_step(OPS[name], dt)
    params = _mlp_state(sizes=(128, 256, 16))
    gen = torch.Generator().manual_seed(5)
    x, y = torch.randn(64, 128, generator=gen).to(dt), torch.randn(64, 16, generator=gen)
    meta = pytree.tree_map(lambda t: t.to("meta"), (params, x, y))
    compiled = trainkernel.compile_training(step, meta, build=False)
    module = parse_module(compiled.ir("tile"))
    kernel = next(op for op in module.ops if isinstance(op, tile.KernelOp))
    assert kernel.cluster is not None and kernel.cluster > 1
    flat = [*params, x, y]
    whole = sched_interpreter.run_program(module, flat)
    blocks = sched_interpreter.run_program(module, flat, partitioned=True)
    assert not any(torch.isnan(t).any() for t in blocks), "a block read a slice it does not hold"
    for a, b in zip(whole, blocks):
        assert float((a.double() - b.double()).norm() / a.double().norm().clamp_min(1e-30)) <= 1e-2
    _assert_same(whole, step(params, x, y), "unpartitioned tile level")


# ------------------------------------------------- decomposed norms, softmax and losses

COMPOSITES = {
    "layer_norm": lambda t: F.layer_norm(t, (t.shape[-1],)),
    "layer_norm_affine": lambda t: F.layer_norm(t, (t.shape[-1],), 1 + 0.1 * t.detach().mean(0), 0.5 * t.detach().mean(0)),
    "rms_norm": lambda t: F.rms_norm(t, (t.shape[-1],), eps=1e-6),
    "softmax": lambda t: F.softmax(t, dim=-1),
    "log_softmax": lambda t: F.log_softmax(t, dim=-1),
    "logsumexp": lambda t: torch.logsumexp(t, dim=-1, keepdim=True) * t,
    "var": lambda t: t.var(dim=-1, keepdim=True) * t,
    "std": lambda t: t.std(dim=0, correction=0) * t,
    "bce_with_logits": lambda t: F.binary_cross_entropy_with_logits(t, torch.sigmoid(t.detach() * 0.3 + 0.1)),
    "huber": lambda t: F.huber_loss(t, 0.3 * t.detach() + 0.5, delta=0.8),
    "smooth_l1": lambda t: F.smooth_l1_loss(t, t.detach() * 0.5, beta=0.4),
    "l1": lambda t: F.l1_loss(t, t.detach() * 0.5 + 0.1),
}


def _rel_err(a, ref):
    d = float(torch.linalg.vector_norm(a.double() - ref))
    n = float(torch.linalg.vector_norm(ref))
    return d / n if n else d


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("name", list(COMPOSITES))
def test_decomposed_composites_within_tolerance(name, dtype):
    """Capture decomposes these (PyTorch's own decompositions), so the result is
    eager's up to rounding: value and gradient against float64 within
    max(4 x eager's own error, 1e-6) (the tolerance policy); and the sched and
    tile levels give the tk level's bits exactly."""
    fn = COMPOSITES[name]

    def step(x, g):
        out, pull = vjp(fn, x)
        return out, pull(g if out.shape == g.shape else torch.ones_like(out))[0], x

    dt = DTYPES[dtype]
    x = _values(torch.float32, nan=False).clamp(-20, 20)
    g = _values(torch.float32, seed=1, nan=False).clamp(-3, 3)
    x, g = x.to(dt), g.to(dt)
    captured = trainkernel.capture(step, (x, g))
    got = trainkernel.interpret(captured, x, g)
    want = step(x, g)
    exact = step(x.double(), g.double())
    for k in range(2):
        eager_err = _rel_err(want[k], exact[k])
        err = _rel_err(got[k], exact[k])
        assert err <= max(4 * eager_err, 1e-6 if dtype == "f32" else 1e-3), (k, err, eager_err)
    for level, program in _levels(captured).items():
        if program is not None:
            _assert_same(run_program(program, [x, g]), got, f"{level} level vs tk level")


# ------------------------------------------------------- indexing with int64

INDEXING = {  # i holds values in [0, 8) with repeats
    "gather_last": lambda x, i: x.gather(1, i[:, :2]),
    "gather_first": lambda x, i: x.gather(0, i[:3]),
    "index_select": lambda x, i: x.index_select(0, i[:, 0]),
    "one_hot_where": lambda x, i: torch.where(i[:, :1] == torch.arange(x.shape[1]), x, -x),
}


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("name", list(INDEXING))
def test_indexing_and_backward_match_eager(name, dtype):
    """Gather, index_select, embedding (and their backward: scatter-adds) select
    values and sum one value with zeros: bit-identical to eager, at every level."""
    fn = INDEXING[name]

    def step(x, i, g):
        out, pull = vjp(lambda t: fn(t, i), x)
        return out, pull(g)[0], x

    dt = DTYPES[dtype]
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(8, 8, generator=gen).to(dt)
    i = (torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]] * 8) + torch.arange(8)[:, None]) % 8  # repeats: accumulation
    g = torch.randn(fn(x, i).shape, generator=gen).to(dt)
    captured = trainkernel.capture(step, (x, i, g))
    want = step(x, i, g)
    _assert_same(trainkernel.interpret(captured, x, i, g), want, "tk level")
    for level, program in _levels(captured).items():
        if program is not None:
            _assert_same(run_program(program, [x, i, g]), want, f"{level} level")


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_embedding_backward_is_a_deterministic_scatter_add(dtype):
    """embedding's forward selects (bit-identical); its backward sums the rows of
    every occurrence of an index, in f32, rounded once: eager CPU accumulates one
    add at a time in the weight's dtype, so for repeated indices the two differ
    by rounding. Checked against float64 under the tolerance policy, and twice
    the same bits (deterministic)."""

    def step(w, i, g):
        out, pull = vjp(lambda t: F.embedding(i, t, padding_idx=2), w)
        return out, pull(g)[0], w

    dt = DTYPES[dtype]
    gen = torch.Generator().manual_seed(5)
    w = torch.randn(8, 6, generator=gen).to(dt)
    i = torch.randint(0, 8, (5, 7), generator=gen)
    g = torch.randn(5, 7, 6, generator=gen).to(dt)
    captured = trainkernel.capture(step, (w, i, g))
    got = trainkernel.interpret(captured, w, i, g)
    assert _bits_equal(got[0], step(w, i, g)[0])
    want, exact = step(w, i, g)[1], step(w.double(), i, g.double())[1]
    assert _rel_err(got[1], exact) <= max(4 * _rel_err(want, exact), 1e-6)
    assert bool((got[1][2] == 0).all()), "padding_idx's row gets no gradient"
    again = trainkernel.interpret(captured, w, i, g)
    _assert_same(again, got, "second run")
