"""target.store_rounded_bits (perf-log step 96): a value rounded to a bf16 or f16
result keeps its narrow bits under a name of its own (`v<n>_bits`, `mmv_bits`), and
a store of the value into a buffer of that type writes those bits instead of
rounding the widened float again. The stored bits are the same (the float is
exactly representable in that type); fp32 values, values stored into another
type, and the resident gemms' two-lambda epilogues (their values cross as floats)
are stored as before. Off by default until measured."""

from __future__ import annotations

import re

import pytest
import torch

from trainkernel import target as T
from trainkernel.workloads import WORKLOADS

from _nvcc import needs_nvcc, nvcc_errors
from _variants import looped, same_bits_off_and_on
from _variants import suite_source as _source

# A store of a kept value: `ptr[index] = v7_bits;`
BITS_STORE = re.compile(r"\] = (\w+)_bits;")


def test_off_by_default():
    assert T.DEFAULT.store_rounded_bits is False
    assert "_bits" not in _source("small")


@pytest.mark.parametrize("name", ["small", "mlp4", "classification", "tiny", "online-adam"])
def test_each_stored_bits_name_is_the_rounding_of_its_value(target_fields, name):
    """On: every `x_bits` is declared as the rounding of an expression and `x` as
    its widening, right after it; every store of a kept value writes its bits."""
    target_fields(store_rounded_bits=True)
    src = _source(name)
    declared = re.findall(r"(?:const )?(__nv_bfloat16|__half) (\w+)_bits = tk::from_float<\1>\(", src)
    assert declared, name
    for ct, v in declared:
        assert re.search(rf"{v}_bits = tk::from_float<{ct}>\(.*\);\n\s*(?:const )?float {v} = tk::to_float\({v}_bits\);",
                         src), v
    stored = BITS_STORE.findall(src)
    assert stored and set(stored) <= {v for _, v in declared}


def test_grid_epilogues_store_the_product_s_bits(target_fields):
    """small's forward gemm: the product, the bias sum and the relu each keep their
    bits; the stored activation is the relu's bits."""
    target_fields(store_rounded_bits=True)
    src = _source("small")
    assert "const __nv_bfloat16 mmv_bits = tk::from_float<__nv_bfloat16>(acc);" in src
    assert re.search(r"const __nv_bfloat16 (v\d+)_bits = tk::from_float<__nv_bfloat16>\(\(\((v\d+)\) > 0\.0f", src)


def test_fp32_steps_print_as_before(target_fields):
    """Nothing is narrow in an fp32 step: the same kernel."""
    w = WORKLOADS["small"]
    target_fields(store_rounded_bits=False)
    off = _source(w, dtype=torch.float32)
    target_fields(store_rounded_bits=True)
    assert _source(w, dtype=torch.float32) == off


def test_only_the_store_and_the_rounding_change(target_fields):
    """Off and on differ only in the kept bits' declarations and the stores that
    use them: with those undone, the sources are the same."""
    target_fields(store_rounded_bits=False)
    off = _source("mlp4")
    target_fields(store_rounded_bits=True)
    on = _source("mlp4")
    decl = re.compile(r"(?:const )?(__nv_bfloat16|__half) (\w+)_bits = tk::from_float<\1>\((.*)\);\n(\s*)"
                      r"((?:const )?float) \2 = tk::to_float\(\2_bits\);")
    undone = decl.sub(lambda m: f"{m.group(5)} {m.group(2)} = tk::to_float(tk::from_float<{m.group(1)}>({m.group(3)}));",
                      on)
    kinds = dict((v, ct) for ct, v in re.findall(r"(__nv_bfloat16|__half) (\w+)_bits = ", on))
    undone = BITS_STORE.sub(lambda m: f"] = tk::from_float<{kinds[m.group(1)]}>({m.group(1)});", undone)
    assert undone == off


@needs_nvcc
@pytest.mark.parametrize("name,dtype", [("small", torch.bfloat16), ("classification", torch.bfloat16),
                                        ("tiny", torch.float16), ("online-adam", torch.bfloat16)])
def test_compiles_for_sm90(tmp_path, target_fields, name, dtype):
    target_fields(store_rounded_bits=True)
    assert nvcc_errors(_source(name, dtype=dtype), tmp_path) == ""


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["small", "mlp4", "medium"])
def test_grid_kernels_give_the_same_bits_on_gpu(target_fields, name):
    same, sources = same_bits_off_and_on(target_fields, "store_rounded_bits", name, 4, seed=2)
    assert ["_bits" in s for s in sources] == [False, True]
    assert same


@pytest.mark.cuda
@pytest.mark.parametrize("name,dtype", [("classification", torch.bfloat16), ("online-adam", torch.bfloat16),
                                        ("tiny", torch.float16)])
def test_one_launch_of_k_steps_gives_the_same_bits_on_gpu(target_fields, name, dtype):
    same, _ = same_bits_off_and_on(target_fields, "store_rounded_bits", name, 7, seed=4, dtype=dtype, run=looped)
    assert same
