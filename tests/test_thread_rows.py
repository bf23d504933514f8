"""target.resident_thread_rows: a resident row reduction of short rows walks a row a
thread (the column reductions' loop) where the printer's count says that is cheaper
than a warp a row (perf-log step 50), its sums folded in the warp's order (step 55)
so the bits stay the warp form's. On by default since run b5812ef-a: the same
error against eager (9.96e-8), classification-adamw-ce 24.65 -> 22.40 us a step."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.func import grad_and_value
from torch.utils import _pytree as pytree

import trainkernel
from trainkernel import target as T
from trainkernel.backend import cuda_target
from trainkernel.workloads import TWINS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import reduce_modes as _modes
from _variants import stepped


def _source(step, args) -> str:
    return trainkernel.compile_training(step, args, build=False).cuda_source


def _ce_source() -> str:
    w = TWINS["classification-adamw-ce"]
    return _source(w.make_step(torch.bfloat16), w.example_args(dtype=torch.bfloat16))


@pytest.fixture
def rows_on(target_fields):
    target_fields(resident_thread_rows=True)


def test_on_by_default():
    assert T.DEFAULT.resident_thread_rows is True
    assert "(thread)" in _ce_source()


def test_the_cross_entropy_rows_walk_a_row_a_thread(rows_on):
    """classification-adamw-ce (a cluster): the max and the sums over its ten classes,
    64 rows, go a row a thread; the loss's full sum stays a block's, the bias
    gradients' column sums stay columns."""
    modes = _modes(_ce_source())
    rows = [m for m in modes if m[2] == 10 and m[3] == 64]
    assert len(rows) == 4 and all(m[1] == "thread" for m in rows), modes
    assert {m[1] for m in modes if m not in rows} == {"block", "column"}, modes


def _norm_step(rows: int, width: int):
    """A resident step with a LayerNorm over `width` features of `rows` rows."""
    def loss_fn(params, x, y):
        w1, w2 = (p.to(torch.bfloat16) for p in params)
        h = F.layer_norm(x @ w1, (width,))
        return ((h @ w2).float() - y).pow(2).mean()

    def step(params, x, y):
        grads, loss = grad_and_value(loss_fn)(params, x, y)
        return loss, tuple(p - 0.05 * g for p, g in zip(params, grads))

    args = ((torch.empty(32, width), torch.empty(width, 8)), torch.empty(rows, 32, dtype=torch.bfloat16),
            torch.empty(rows, 8))
    return step, args


def test_few_long_rows_stay_a_warp_a_row(rows_on):
    """A LayerNorm over 1024 features of 8 rows (a cluster of 16: 64 features a block):
    a thread would walk 64 elements (256 at the assumed conflicts) where one warp a row
    costs 2 + 40: warps. Over 256 features of 32 rows (a cluster of 8, 32 a block),
    threads (128 against 4 x 41)."""
    few = _modes(_source(*_norm_step(8, 1024)))
    rows = [m for m in few if m[3] == 8]
    assert rows and all(m[1] == "warp" for m in rows), few
    many = _modes(_source(*_norm_step(32, 256)))
    rows = [m for m in many if m[3] == 32]
    assert rows and all(m[1] == "thread" for m in rows), many


def test_the_cost_rule():
    """ceil(rows / threads) x elements x ROW_THREAD_CONFLICTS against
    ceil(rows / warps) x (ceil(elements / 32) + WARP_COMBINE_ELEMENTS), 256 threads."""
    class Kernel:
        threads = 256

    printer = cuda_target.ResidentPrinter.__new__(cuda_target.ResidentPrinter)
    printer.kernel = Kernel()
    assert printer._thread_rows_cheaper(64, 10)  # 40 against 328
    assert printer._thread_rows_cheaper(64, 64)  # 256 against 336
    assert not printer._thread_rows_cheaper(64, 128)  # 512 against 352
    assert printer._thread_rows_cheaper(1024, 16)  # 256 against 5248
    assert not printer._thread_rows_cheaper(8, 1000)  # 4000 against 72


def test_sums_fold_in_the_warps_order(rows_on):
    """A thread's sum of a row of ten: ten slots (lanes 0-9 of the warp form), then
    the shuffle tree's pairs at offsets 16 .. 1 where both slots exist; the max keeps
    the serial walk (max_nan's result does not depend on the order)."""
    src = _ce_source()
    sums = re.findall(r"// tile\.reduce tk\.sum split -?\d+ \(thread\).*?\n  }\n", src, re.S)
    assert len(sums) == 2, _modes(src)
    for body in sums:
        assert "float tk_t[10];" in body
        assert "for (int r = l; r < 10; r += 32) {" in body
        assert "for (int l = 0; l < s; ++l) if (l + s < 10) tk_t[l] = __fadd_rn(tk_t[l], tk_t[l + s]);" in body
        assert "float accum = tk_t[0];" in body
    maxes = re.findall(r"// tile\.reduce tk\.max split -?\d+ \(thread\).*?\n  }\n", src, re.S)
    assert maxes and all("tk_t" not in m and "for (int r = 0; r < 10; ++r) {" in m for m in maxes)


@needs_nvcc
def test_compiles_for_sm90(rows_on, tmp_path):
    src = _ce_source()
    assert "(thread)" in src
    assert nvcc_errors(src, tmp_path) == ""


def _rel(out, ref) -> float:
    o, r = out.detach().double().cpu(), ref.detach().double().cpu()
    if not bool(torch.isfinite(o).all()):
        return math.inf
    n, d = float(torch.linalg.vector_norm(r)), float(torch.linalg.vector_norm(o - r))
    return (0.0 if d == 0 else math.inf) if n == 0 else d / n


@pytest.mark.cuda
def test_thread_rows_match_pytorch_and_rerun_bit_identically_on_gpu(rows_on):
    """classification-adamw-ce with the rows a thread: 20 steps within 4x eager bf16's
    error against float64 (every leaf), and a second run from the same state gives
    the same bits (the serial order is fixed)."""
    w = TWINS["classification-adamw-ce"]
    step, ref_step = w.make_step(torch.bfloat16), w.reference_step()
    batches = w.make_batches(4, seed=3, device="cuda", dtype=torch.bfloat16)
    c = trainkernel.compile_training(step, (w.init_state(device="cuda"), *batches[0]))
    assert "(thread)" in c.cuda_source
    runs = []
    for _ in range(2):
        state = w.init_state(device="cuda")
        eager = pytree.tree_map(torch.clone, state)
        exact = pytree.tree_map(lambda t: t.double(), state)
        worst: dict[int, list[tuple[float, float]]] = {}
        for t in range(20):
            x, y = batches[t % 4]
            got, want, ref = c(state, x, y), step(eager, x, y), ref_step(exact, x.double(), y)
            for k, (a, b, r) in enumerate(zip(*(pytree.tree_leaves(o) for o in (got, want, ref)))):
                worst.setdefault(k, []).append((_rel(a, r), _rel(b, r)))
            state, eager, exact = got[-1], want[-1], ref[-1]
        torch.cuda.synchronize()
        for k, errs in worst.items():
            kernel, allowed = max(e[0] for e in errs), max(4 * max(e[1] for e in errs), 1e-6)
            assert kernel <= allowed, (k, kernel, allowed)
        runs.append([t.clone() for t in pytree.tree_leaves(state)])
    assert all(torch.equal(a, b) for a, b in zip(*runs))


@pytest.mark.cuda
def test_thread_rows_give_the_warp_rows_bits_on_gpu(target_fields):
    """Six steps of classification-adamw-ce from the same state on the same batches,
    its cross-entropy rows a thread and a warp: the same bits (the thread folds a
    sum in the warp's order)."""
    runs = []
    for on in (False, True):
        target_fields(resident_thread_rows=on)
        src, outputs = stepped("classification-adamw-ce", 6, seed=2)
        assert ("(thread)" in src) == on
        runs.append(outputs)
    assert all(torch.equal(a, b) for a, b in zip(*runs))


def _f32_add(a, b):
    return np.float32(np.float32(a) + np.float32(b))


def _lane_folds(row, lanes: int) -> list:
    """Lane (or slot) l's fold of elements l, l + 32, ... from 0.0f, for l < lanes."""
    folds = []
    for l in range(lanes):
        acc = 0.0
        for r in range(l, len(row), 32):
            acc = _f32_add(acc, row[r])
        folds.append(acc)
    return folds


def _warp_sum(row):
    """tk::warp_allreduce's sum as lane 0 ends it: every lane's fold, then v[l] +
    v[l ^ offset] at offsets 16 .. 1 (every lane, all 32)."""
    lanes = _lane_folds(row, 32)
    offset = 16
    while offset:
        lanes = [_f32_add(lanes[l], lanes[l ^ offset]) for l in range(32)]
        offset >>= 1
    return lanes[0]


def _slot_sum(row):
    """The thread form as printed: min(32, n) slots, the tree's pairs where both exist."""
    t = _lane_folds(row, min(32, len(row)))
    s = 16
    while s:
        for l in range(s):
            if l + s < len(t):
                t[l] = _f32_add(t[l], t[l + s])
        s >>= 1
    return t[0]


@pytest.mark.parametrize("n", [1, 2, 3, 10, 17, 31, 32, 33, 64, 70])
def test_the_slot_tree_is_the_warps_sum_bit_for_bit(n):
    """The printed fold's claim, in float32 on the host: skipping the idle lanes'
    +0.0 partners gives lane 0's bits, with signed zeros, huge and tiny values."""
    rng = np.random.default_rng(n)
    rows = [rng.standard_normal(n).astype(np.float32) * np.float32(10.0) ** rng.integers(-20, 20, n),
            np.full(n, -0.0, dtype=np.float32),
            np.where(rng.random(n) < 0.5, np.float32(-0.0), np.float32(1e-30)).astype(np.float32)]
    for row in rows:
        a, b = _warp_sum(row), _slot_sum(row)
        assert np.float32(a).tobytes() == np.float32(b).tobytes(), (n, row, a, b)
