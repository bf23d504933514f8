"""``trainkernel bench``: the training-loop benchmark (benchmarks/train_loop.py).

The CLI calls ``main(argv)``; it takes the same options as
``python -m benchmarks.train_loop`` (``--help`` lists them) and returns the
exit status. The harness lives in the source checkout's ``benchmarks/``
folder, next to the ``trainkernel`` package, not inside the installed wheel.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Optional, Sequence

_PRIVATE = "_trainkernel_benchmarks"


def _harness_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "benchmarks"


def load_harness() -> ModuleType:
    """``benchmarks.train_loop`` of this checkout.

    xdsl's wheel installs a top-level package that is also called
    ``benchmarks``, so ``import benchmarks`` may find that one; where it does,
    the checkout's folder is loaded under a private module name instead (the
    harness uses only relative imports, so that works)."""
    folder = _harness_dir()
    if not (folder / "train_loop.py").is_file():
        raise FileNotFoundError(
            f"{folder / 'train_loop.py'} not found: `trainkernel bench` runs from a source checkout "
            "of TrainKernel (the benchmarks/ folder is not part of the installed package)"
        )
    loaded = sys.modules.get("benchmarks")
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve().parent == folder:
        return importlib.import_module("benchmarks.train_loop")
    if _PRIVATE not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            _PRIVATE, folder / "__init__.py", submodule_search_locations=[str(folder)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[_PRIVATE] = module
        spec.loader.exec_module(module)
    return importlib.import_module(_PRIVATE + ".train_loop")


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        harness = load_harness()
    except FileNotFoundError as exc:
        print(f"trainkernel bench: {exc}", file=sys.stderr)
        return 2
    return harness.main(list(sys.argv[1:] if argv is None else argv), prog="trainkernel bench")


if __name__ == "__main__":
    sys.exit(main())
