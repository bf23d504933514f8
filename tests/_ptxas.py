"""`nvcc -Xptxas -v` output, per compiled kernel (shared by the device-library tests)."""

from __future__ import annotations

import re

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_USED = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_STACK = re.compile(r"(\d+) bytes stack frame")


def parse_ptxas(output: str) -> list[dict]:
    """[{kernel, registers, spill_stores, spill_loads, stack}], one per entry function."""
    rows: list[dict] = []
    for line in output.splitlines():
        if m := _ENTRY.search(line):
            rows.append({"kernel": m.group(1), "registers": None, "spill_stores": 0, "spill_loads": 0, "stack": 0})
        elif rows and (m := _SPILL.search(line)):
            rows[-1]["spill_stores"], rows[-1]["spill_loads"] = int(m.group(1)), int(m.group(2))
            if st := _STACK.search(line):
                rows[-1]["stack"] = int(st.group(1))
        elif rows and (m := _USED.search(line)):
            rows[-1]["registers"] = int(m.group(1))
    return rows


def ptxas_kernel_rows(src: str, tmp_path) -> list[dict]:
    """parse_ptxas's rows of a printed kernel's source, built to a cubin for its
    architecture with the build's flags (asserts the build succeeds)."""
    import subprocess

    from trainkernel.backend.build import arch_for_source, nvcc_flags

    cu = tmp_path / "k.cu"
    cu.write_text(src)
    out = subprocess.run(["nvcc", *nvcc_flags(arch_for_source(src, "sm_90")), "-Xptxas", "-v", "-cubin", str(cu),
                          "-o", str(tmp_path / "k.cubin")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return parse_ptxas(out.stdout + out.stderr)
