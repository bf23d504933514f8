# lit configuration for TrainKernel's IR tests.
#
# `lit lit_tests` (or `lit -v lit_tests/<folder>`) runs every `.mlir` file below
# this directory: lit_tests/tk, lit_tests/opt, lit_tests/passes/<pass>,
# lit_tests/sched, lit_tests/tile, ... A new folder needs no configuration.
#
# RUN lines may use:
#   trainkernel-opt  -> `<this python> -m trainkernel.tools.opt` (no console
#                       script or PATH entry needed; the repo is on PYTHONPATH)
#   filecheck        -> `<this python> -m filecheck` (FileCheck is an alias)
#   not              -> lit's builtin: invert the exit status
#   %PYTHON          -> the interpreter running lit
# Helper inputs that are not tests themselves go in a folder named `Inputs`.

import os
import shlex
import sys

import lit.formats

config.name = "TrainKernel"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "Output", "lit.cfg.py", "README.md"]

config.test_source_root = os.path.dirname(os.path.abspath(__file__))
# Per-test temporaries (%t) go under lit_tests/Output/, which .gitignore covers.
# TK_LIT_OUTPUT moves them elsewhere (e.g. a read-only checkout).
config.test_exec_root = os.environ.get(
    "TK_LIT_OUTPUT", os.path.join(config.test_source_root, "Output")
)

repo_root = os.path.dirname(config.test_source_root)
python = shlex.quote(sys.executable)

# The tools run from this checkout, whatever is (or is not) installed.
config.environment["PYTHONPATH"] = os.pathsep.join(
    p for p in (repo_root, os.environ.get("PYTHONPATH", "")) if p
)
# Deterministic hashing and no stray bytecode in the source tree.
config.environment["PYTHONHASHSEED"] = "0"
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
for var in ("TORCH_HOME", "XDG_CACHE_HOME", "TRAINKERNEL_CACHE_DIR", "CUDA_VISIBLE_DEVICES"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

# Substitutions are regexes applied to RUN lines before lit's own (%s, %t):
# match the tool names only as whole words, so paths are left alone.
config.substitutions.append((r"(?<![\w./-])trainkernel-opt(?![\w.-])", f"{python} -m trainkernel.tools.opt"))
config.substitutions.append((r"(?<![\w./-])(filecheck|FileCheck)(?![\w.-])", f"{python} -m filecheck"))
config.substitutions.append(("%PYTHON", python))
