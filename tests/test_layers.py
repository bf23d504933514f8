"""The package's layers import downward only, and no import cycle exists.

Every module under trainkernel/ is parsed with `ast` (nothing is imported), and
every `import` / `from ... import` statement counts, wherever it stands: at
the top, or inside a function (a lazy import is still a dependency). An import
names the module it loads: `from trainkernel.dialects import tk` is an edge to
`trainkernel.dialects.tk` (a submodule), `from trainkernel.dialects.tk import
TensorT` to `trainkernel.dialects.tk`. Loading a submodule also runs its
package's `__init__`, but that is not counted as an edge back to the package
(it would make every package that imports its own submodules a "cycle").
`importlib.import_module` with a computed name is invisible to this test.

docs/architecture.md explains the layers; `ALLOWED` is that table.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import trainkernel

ROOT = Path(trainkernel.__file__).resolve().parent
PKG = "trainkernel"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(module: str, level: int, current: str, is_package: bool) -> str:
    if level == 0:
        return module
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def imports_of(name: str, modules: dict[str, Path] | None = None) -> set[str]:
    """The trainkernel modules that module `name` imports (anywhere in its body)."""
    modules = MODULES if modules is None else modules
    path = modules[name]
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(node.module or "", node.level, name, is_package)
            targets = [f"{mod}.{alias.name}" if f"{mod}.{alias.name}" in modules else mod for alias in node.names]
        for t in targets:
            if t == PKG or t.startswith(PKG + "."):
                # `import a.b.c` loads a.b.c; keep the longest prefix that is a module.
                while t not in modules and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in modules and t != name:
                    found.add(t)
    return found


GRAPH: dict[str, set[str]] = {m: imports_of(m) for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    cycles = _cycles(GRAPH)
    assert not cycles, "import cycles inside trainkernel/ (lazy imports included):\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


def test_the_cycle_finder_finds_cycles():
    """The check itself can fail: a lazy import that closes a loop is a cycle."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_lazy_and_relative_imports_are_edges(tmp_path):
    pkg = tmp_path / PKG
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import leaf\n")
    (pkg / "sub" / "leaf.py").write_text("def f():\n    from trainkernel.top import g\n    import trainkernel.sub\n")
    (pkg / "top.py").write_text("from .sub.leaf import f\n")
    mods = {_module_name_in(p, tmp_path): p for p in pkg.rglob("*.py")}
    assert imports_of("trainkernel.sub.leaf", mods) == {"trainkernel.top", "trainkernel.sub"}
    assert imports_of("trainkernel.top", mods) == {"trainkernel.sub.leaf"}
    assert imports_of("trainkernel.sub", mods) == {"trainkernel.sub.leaf"}
    graph = {m: imports_of(m, mods) for m in mods}
    assert ["trainkernel.sub", "trainkernel.sub.leaf", "trainkernel.top"] in _cycles(graph)


def _module_name_in(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


# What each layer may import (besides itself). A module belongs to the first
# group whose prefix it starts with; docs/architecture.md draws the same picture.
LAYERS: dict[str, str] = {
    "trainkernel.util": "base",
    "trainkernel.elements": "base",
    "trainkernel.errors": "base",
    "trainkernel.target": "base",
    "trainkernel.dialects": "dialects",
    "trainkernel.ir": "ir",
    "trainkernel.numerics": "numerics",
    "trainkernel.interpreter": "interpreters",
    "trainkernel.sched_interpreter": "interpreters",
    "trainkernel.item_interpreter": "interpreters",
    "trainkernel.passes": "passes",
    "trainkernel.item_deps": "passes",  # an analysis of the tile IR that a pass and the printer read
    "trainkernel.backend": "backend",
    "trainkernel.targets": "backend",
    "trainkernel.runtime": "runtime",
    "trainkernel.frontend": "frontend",
    "trainkernel.workloads": "workloads",
    "trainkernel.pipeline": "pipeline",
    "trainkernel.lowering_cache": "pipeline",
    "trainkernel.api": "api",
    "trainkernel.tools": "tools",
    "trainkernel": "package",
}
ALLOWED: dict[str, set[str]] = {
    "base": {"base"},
    "dialects": {"base"},
    "ir": {"dialects"},
    "numerics": {"base", "dialects"},
    "passes": {"base", "dialects", "numerics"},
    "interpreters": {"base", "dialects", "numerics", "passes"},  # may reuse a pass's analysis of what it runs
    "backend": {"base", "dialects", "passes"},  # the printer runs after the passes and may read their analyses
    "runtime": {"base"},
    "frontend": {"base", "dialects", "ir", "passes"},
    "workloads": {"base"},
    "pipeline": {"base", "dialects", "ir", "passes", "backend", "frontend"},
    "api": {"base", "pipeline", "frontend", "backend", "runtime"},
    "tools": {"base", "dialects", "passes", "backend", "api", "workloads"},
    "package": {"frontend", "interpreters", "api"},
}


def layer_of(module: str) -> str:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_downward(module):
    mine = layer_of(module)
    bad = sorted(t for t in GRAPH[module] if layer_of(t) != mine and layer_of(t) not in ALLOWED[mine])
    assert not bad, f"{module} ({mine}) imports {bad}; {mine} may import only {sorted(ALLOWED[mine])}"


def test_dialects_import_only_the_element_table_and_each_other():
    for module in MODULES:
        if layer_of(module) == "dialects":
            assert GRAPH[module] <= {m for m in MODULES if layer_of(m) in ("dialects", "base")}, module
