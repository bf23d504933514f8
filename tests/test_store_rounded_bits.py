"""target.store_rounded_bits (perf-log step 96): a value rounded to a bf16 or f16
result keeps its narrow bits under a name of its own (`v<n>_bits`, `mmv_bits`), and
a store of the value into a buffer of that type writes those bits instead of
rounding the widened float again; relu, its gradient and select, whose result is
an operand or +0, select their operands' bits instead of rounding again. The stored bits are the same (the float is
exactly representable in that type); fp32 values, values stored into another
type, and the resident gemms' two-lambda epilogues (their values cross as floats)
are stored as before. On by default since it was measured (run 484c6f1-h100-r)."""

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


def test_on_by_default():
    assert T.DEFAULT.store_rounded_bits is True
    assert "_bits" in _source("small")


@pytest.mark.parametrize("name", ["small", "mlp4", "classification", "tiny", "online-adam"])
def test_each_stored_bits_name_is_the_rounding_of_its_value(target_fields, name):
    """On: every `x_bits` is declared (a rounding, or a selection of kept bits) and
    `x` as its widening right after it; every store of a kept value writes its bits."""
    target_fields(store_rounded_bits=True)
    src = _source(name)
    declared = re.findall(r"(?:const )?(__nv_bfloat16|__half) (\w+)_bits = ", src)
    assert declared, name
    for ct, v in declared:
        assert re.search(rf"{v}_bits = .*;\n\s*(?:const )?float {v} = tk::to_float\({v}_bits\);", src), v
    stored = BITS_STORE.findall(src)
    assert stored and set(stored) <= {v for _, v in declared}


def test_grid_epilogues_store_the_product_s_bits(target_fields):
    """small's forward gemm: the product and the bias sum keep their bits, the relu
    selects them; the stored activation is the relu's bits."""
    target_fields(store_rounded_bits=True)
    src = _source("small")
    assert "const __nv_bfloat16 mmv_bits = tk::from_float<__nv_bfloat16>(acc);" in src
    relu = re.search(r"const __nv_bfloat16 (v\d+)_bits = \(\((v\d+)\) > 0\.0f", src)
    assert relu and f"] = {relu.group(1)}_bits;" in src


def test_fp32_steps_print_as_before(target_fields):
    """Nothing is narrow in an fp32 step: the same kernel."""
    w = WORKLOADS["small"]
    target_fields(store_rounded_bits=False)
    off = _source(w, dtype=torch.float32)
    target_fields(store_rounded_bits=True)
    assert _source(w, dtype=torch.float32) == off


def _undone(on: str) -> str:
    """The source `on` with store_rounded_bits' changes undone: each kept value's
    two declarations back to one rounding expression (a selection of bits back to
    the op's float form, +0's bits back to 0.0f), each store of bits back to a
    rounding of the value."""
    decl = re.compile(r"(?:const )?(__nv_bfloat16|__half) (\w+)_bits = (.*);\n(\s*)"
                      r"((?:const )?float) \2 = tk::to_float\(\2_bits\);")

    def one(m: re.Match) -> str:
        ct, v, rhs, _, decl_float = m.groups()
        rounding = f"tk::from_float<{ct}>("
        if rhs.startswith(rounding) and rhs.endswith(")"):
            expr = rhs[len(rounding):-1]
        else:  # a NARROW_SELECT form
            expr = re.sub(r"\((\w+)_bits\)", r"(\1)", rhs).replace(f"tk::zero<{ct}>()", "0.0f")
        return f"{decl_float} {v} = tk::to_float(tk::from_float<{ct}>({expr}));"

    undone = decl.sub(one, on)
    kinds = dict((v, ct) for ct, v in re.findall(r"(__nv_bfloat16|__half) (\w+)_bits = ", on))
    return BITS_STORE.sub(lambda m: f"] = tk::from_float<{kinds[m.group(1)]}>({m.group(1)});", undone)


@pytest.mark.parametrize("name", ["mlp4", "small", "classification", "online-adam", "mlp4-adamw-ce"])
def test_only_the_store_and_the_rounding_change(target_fields, name):
    """Off and on differ only in the kept bits' declarations and the stores that
    use them: with those undone, the sources are the same."""
    target_fields(store_rounded_bits=False)
    off = _source(name)
    target_fields(store_rounded_bits=True)
    assert _undone(_source(name)) == off


def test_relu_and_its_gradient_select_bits(target_fields):
    """small: the forward relu selects its input's bits or +0's, the backward
    relu gradient the product's bits or +0's: no rounding of the selected float."""
    target_fields(store_rounded_bits=True)
    src = _source("small")
    assert re.search(r"const __nv_bfloat16 v\d+_bits = \(\((v\d+)\) > 0\.0f \|\| \(\1\) != \(\1\) "
                     r"\? \(\1_bits\) : tk::zero<__nv_bfloat16>\(\)\);", src)
    assert re.search(r"const __nv_bfloat16 v\d+_bits = \(\(tk_l\.v\[0\]\) <= 0\.0f "
                     r"\? tk::zero<__nv_bfloat16>\(\) : \(mmv_bits\)\);", src)


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
