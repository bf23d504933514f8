"""target.exchange_wide_stores (perf-log step 118): a cluster exchange's remote stores
as wide as the layout allows. A split gemm pushes each fragment's column pair as one
8-byte st.async (tk::push_async_pair; tk::push_partial_pair without async pushes)
where the product's columns and each owner's chunk of the exchange are even, and the
asynchronous publish copies runs of elements of up to 16 bytes (of the narrowest
published home) in one row of every home (tk::store_async_bytes). Off: a 32-bit store
each, the forms of steps 67 and 68 (tests/test_async_pushes.py). On by default since
run 144fa00-h100-a measured it (perf-log step 121)."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.workloads import TWINS, WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on
from _variants import suite_source as _source

SHAPES = {
    # Two hidden layers of 256 at batch 64: two exchanges of 16,384 partials (the
    # step ncu found 71% in its exchanges as a cluster of 8, run f6e2188-a; a grid
    # kernel since step 119's cost model: forced resident here).
    "online-64x256x256": WORKLOADS["online"].with_sizes(64, (128, 256, 256, 16)),
    # Two hidden layers of 128 at batch 16: resident by the model, exchanges of 2,048.
    "online-16x128x128": WORKLOADS["online"].with_sizes(16, (64, 128, 128, 8)),
    "online-33": WORKLOADS["online"].with_sizes(33, (100, 300, 7)),
    "classification-50": WORKLOADS["classification"].with_sizes(50, (100, 300, 10)),
    "adamw-9": TWINS["mlp4-adamw-ce"].with_sizes(9, (20, 36, 36, 36, 256)),
}


def _w(name: str):
    return SHAPES.get(name, name)


def _resident(name: str, **kw) -> str:
    """The step's source, resident (forced: 64 x 256 x 256 is a grid kernel by the model)."""
    return _source(_w(name), resident="force", **kw)


PUSH = re.compile(r"tk::push_async<kCluster>\(part, (\d+), i \* (\d+) \+ j, vals\[0\], rank, tk_xbar \+ (\d+)\); }(.)")


def _pushes(src: str) -> list[tuple[int, int, bool]]:
    """(elements, columns, paired) of each split gemm's push in `src`."""
    return [(int(n), int(c), end == ",") for n, c, _, end in PUSH.findall(src)]


def _cluster(src: str) -> int:
    return int(re.search(r"constexpr int kCluster = (\d+);", src).group(1))


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@pytest.fixture
def wide(target_fields):
    target_fields(exchange_wide_stores=True)


def test_on_by_default(target_fields):
    """On by default since the GPU measured it (perf-log step 121): the default
    kernels are those with it on, and they use the wide forms."""
    assert T.DEFAULT.exchange_wide_stores is True
    src = _source("online")
    assert "push_async_pair" in src and "store_async_bytes<16>" in src
    target_fields(exchange_wide_stores=True)
    assert _source("online") == src


def test_on_pushes_pairs_and_publishes_16_bytes(wide):
    src = _source("online")
    assert "tk::push_async_pair<kCluster>" in src and "tk::store_async_bytes<16>" in src


@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "classification-adamw-ce",
                                  "online-64x256x256", "online-16x128x128", "online-33", "classification-50",
                                  "adamw-9"])
def test_a_gemm_pushes_pairs_exactly_where_they_share_an_owner(wide, name):
    """The rule, on every split gemm of the step: pairs where the columns and each
    owner's chunk are even; a push an element elsewhere."""
    src = _resident(name)
    pushes = _pushes(src)
    assert pushes, "no split gemm"
    cluster = _cluster(src)
    for n, cols, paired in pushes:
        assert paired == (cols % 2 == 0 and _ceil(n, cluster) % 2 == 0), (n, cols, cluster)


def test_two_layers_of_256_push_pairs_and_publish_16_bytes(wide):
    """online 64 x 128-256-256-16, resident: each of the two exchanges of 16,384
    partials (a chunk of 16,384 / cluster an owner) pushes pairs and publishes its
    bf16 home (264-element pitch) in runs of 8 elements, one 16-byte store a run."""
    src = _resident("online-64x256x256")
    assert _cluster(src) in (8, 16)
    assert [p for p in _pushes(src) if p[0] == 16384] == [(16384, 256, True)] * 2
    assert src.count("tk::exchange_async_published<kCluster, 8, tk::SumOp>(part, 16384,") == 2
    copies = re.findall(r"tk::store_async_bytes<(\d+)>\(&s\d+\[\(i\)\*264 \+ \(j\)\], r, tk_xbar \+ \d+\);", src)
    assert copies == ["16", "16"]
    assert "store_async_b32(&" not in src.split("tk_step(")[1]


def test_online_publishes_runs_of_four(wide):
    """online: the squared errors' 20-float pitch takes runs of 4 (16 bytes), not 8;
    dy (bf16) then takes 8 bytes a run."""
    src = _source("online")
    assert "tk::exchange_async_published<kCluster, 4, tk::SumOp>(part, 1024," in src
    copy = src[src.index("// tk::store_async_bytes: into the other ranks' copies"):].split("    });\n", 1)[0]
    assert copy.count("if (!tk_more) tk::store_async_bytes<16>(&s") == 1
    assert copy.count("tk::store_async_bytes<8>(&s") == 1 and copy.count("tk::store_async_bytes<") == 2


def test_fp32_runs_of_four(wide):
    """fp32 homes alone: runs of 4 elements, 16 bytes (a 32-bit store each when off)."""
    src = _source("online", dtype=torch.float32)
    assert "tk::exchange_async_published<kCluster, 4, " in src and "tk::store_async_bytes<16>" in src


@pytest.mark.parametrize("n, cols, cluster, wide, paired", [
    (16384, 256, 8, True, True),     # 64 x 256: a chunk of 2,048
    (16384, 256, 8, False, False),   # off: an element a store
    (231, 7, 8, True, False),        # 33 x 7: odd columns
    (324, 36, 8, True, False),       # 9 x 36 on 8 blocks: a chunk of 41
    (324, 36, 4, True, False),       # ... on 4: 81
    (2304, 256, 8, True, True),      # 9 x 256: 288
])
def test_pair_pushes_rule(n, cols, cluster, wide, paired):
    """tile.pair_pushes, the one rule the printer and tile-resident's model share."""
    from trainkernel.dialects import tile

    assert tile.pair_pushes(n, cols, cluster, wide) is paired


@pytest.mark.parametrize("n, cluster, homes, wide, step", [
    (16384, 8, [(2, 256, (264,))], True, 8),           # a padded bf16 home: runs of 8 (16 bytes)
    (16384, 8, [(2, 256, (264,))], False, 2),          # off: a bf16 pair, one 32-bit word
    (1024, 16, [(4, 16, (20,)), (2, 16, (16,))], True, 4),  # online: the 20-float pitch takes 4
    (1024, 16, [(4, 16, (16,))], False, 1),            # fp32 alone, off: an element a store
    (1024, 16, [(4, 16, (16,))], True, 4),             # fp32 alone: runs of 4 (16 bytes)
    (231, 8, [(2, 7, (7,))], True, None),              # odd: no run of 32-bit words
    (640, 16, [(2, 10, (10,))], True, 2),              # 10 columns: pairs only
    (64, 4, [(8, 16, (16,))], True, None),             # 8-byte elements: not published by runs
    (64, 4, [], True, None),                           # nothing published
])
def test_publish_run_rule(n, cluster, homes, wide, step):
    """tile.publish_run: the longest run (at most 16 bytes of the narrowest home)
    that the exchange's elements, each owner's chunk and every home's rows and
    strides allow."""
    from trainkernel.dialects import tile

    assert tile.publish_run(n, cluster, homes, wide) == step


def test_publish_store_bytes_rule():
    """A run of 8 fp32 elements (32 bytes) takes two 16-byte stores; off, 32-bit words."""
    from trainkernel.dialects import tile

    assert [tile.publish_store_bytes(s, e, True) for s, e in ((8, 4), (8, 2), (4, 2), (2, 2), (1, 4))] == \
        [16, 16, 8, 4, 4]
    assert tile.publish_store_bytes(8, 2, False) == 4


def test_odd_elements_keep_the_narrow_forms(wide):
    """online 33 x 100-300-7: 231 partials (odd): no pair, and the publish keeps
    tk::publish under the cluster barrier, as without."""
    src = _source(_w("online-33"))
    assert "push_async_pair" not in src and "exchange_async_published" not in src


def test_off_is_steps_67_and_68(target_fields):
    target_fields(exchange_wide_stores=False)
    src = _resident("online-64x256x256")
    assert "push_async_pair" not in src and "store_async_bytes<16>" not in src
    assert src.count("tk::exchange_async_published<kCluster, 2, tk::SumOp>(part, 16384,") == 2


def test_pairs_without_async_pushes_are_dsmem_stores(target_fields):
    target_fields(exchange_async_pushes=False, exchange_wide_stores=True)
    src = _source("online")
    assert "tk::push_partial_pair<kCluster>(part, 1024, i * 16 + j, va[0], vb[0], rank); });" in src
    assert "push_async" not in src


@needs_nvcc
@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "online-64x256x256",
                                  "online-16x128x128", "adamw-9"])
def test_compiles_for_sm90(wide, tmp_path, name):
    assert nvcc_errors(_resident(name), tmp_path) == ""


@needs_nvcc
def test_pairs_without_async_pushes_compile_for_sm90(target_fields, tmp_path):
    target_fields(exchange_async_pushes=False, exchange_wide_stores=True)
    assert nvcc_errors(_source("online"), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "classification", "online-adam", "classification-adamw-ce",
                                  "online-16x128x128", "adamw-9"])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name):
    """7 steps in one launch (the mbarriers' phases alternate step by step): the same
    state and last outputs as with 32-bit stores, bit for bit."""
    same, sources = same_bits_off_and_on(target_fields, "exchange_wide_stores", _w(name), 7, seed=4, run=looped)
    assert ["store_async_bytes<16>" in s or "push_async_pair" in s for s in sources] == [False, True]
    assert same


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["online", "online-16x128x128"])
def test_launches_of_one_step_give_the_same_bits_on_gpu(target_fields, name):
    assert same_bits_off_and_on(target_fields, "exchange_wide_stores", _w(name), 4, seed=2)[0]


@pytest.mark.cuda
def test_fp32_gives_the_same_bits_on_gpu(target_fields):
    assert same_bits_off_and_on(target_fields, "exchange_wide_stores", "online", 7, seed=4, run=looped,
                                dtype=torch.float32)[0]


@pytest.mark.cuda
def test_pairs_without_async_pushes_give_the_same_bits_on_gpu(target_fields):
    assert same_bits_off_and_on(target_fields, "exchange_wide_stores", "classification", 7, seed=4, run=looped,
                                exchange_async_pushes=False)[0]
