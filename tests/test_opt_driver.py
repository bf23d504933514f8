"""`trainkernel-opt` as a user meets it: a subprocess. Malformed input of every
kind ends in an `error:` diagnostic that says what is wrong (and where, when there
is a where) and a non-zero exit, never a Python traceback. Valid input, including
an empty file, round-trips.

A second part drives `main()` in-process with hypothesis-generated garbage and
mutated tk programs, many more cases than subprocesses could afford.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
OPT = [sys.executable, "-m", "trainkernel.tools.opt"]

VALID = """\
func.func @step(%x: tensor<4x8xf32>, %w: tensor<8xf32>, %lr: tensor<f32>) -> tensor<8xf32> {
  %y = tk.mul %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %g = tk.sum %y axes [0] : tensor<4x8xf32> -> tensor<8xf32>
  %s = tk.mul %g, %lr : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %n = tk.sub %w, %s : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %n : tensor<8xf32>
}
"""


class Result:
    def __init__(self, proc: subprocess.CompletedProcess[bytes]):
        self.rc = proc.returncode
        self.out = proc.stdout.decode("utf-8", "replace")
        self.err = proc.stderr.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return f"rc={self.rc}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


def run_opt(*args: str | Path, stdin: bytes | None = None, cwd: Path | None = None) -> Result:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.run(
        [*OPT, *map(str, args)],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=env,
        cwd=cwd or REPO,
        timeout=300,
    )
    return Result(proc)


def assert_diagnostic(r: Result, *needles: str) -> None:
    """Non-zero exit, an `error:` line, no traceback, and every needle in stderr."""
    assert r.rc != 0, r
    assert "Traceback" not in r.err and "Traceback" not in r.out, r
    assert "error:" in r.err, r
    for needle in needles:
        assert needle in r.err, f"{needle!r} not in stderr\n{r}"


def write(tmp_path: Path, text: str | bytes, name: str = "in.mlir") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# ----------------------------------------------------------------- valid input


def test_valid_input_round_trips(tmp_path):
    src = write(tmp_path, VALID)
    custom = run_opt(src)
    assert custom.rc == 0, custom
    assert custom.err == ""
    assert "%g = tk.sum %y axes [0] : tensor<4x8xf32> -> tensor<8xf32>" in custom.out
    again = run_opt(stdin=custom.out.encode())
    assert again.rc == 0 and again.out == custom.out, again


def test_generic_printing_round_trips(tmp_path):
    src = write(tmp_path, VALID)
    generic = run_opt(src, "--print-op-generic")
    assert generic.rc == 0, generic
    assert '"tk.sum"(%y) <{axes = array<i64: 0>}> : (tensor<4x8xf32>) -> tensor<8xf32>' in generic.out
    assert "tk.sum %y" not in generic.out
    custom = run_opt(src)
    back = run_opt(stdin=generic.out.encode())
    assert back.rc == 0 and back.out == custom.out, back


@pytest.mark.parametrize(
    "text",
    [b"", b"\n\n  \t\n", b"// only a comment\n", b"// a\n\n// b\n"],
    ids=["empty", "whitespace", "comment", "comments"],
)
def test_empty_input_is_an_empty_module(tmp_path, text):
    r = run_opt(write(tmp_path, text))
    assert r.rc == 0, r
    assert r.out.strip() == "builtin.module {\n}"
    from_stdin = run_opt(stdin=text)
    assert from_stdin.rc == 0 and from_stdin.out == r.out, from_stdin


def test_empty_input_through_passes(tmp_path):
    r = run_opt(write(tmp_path, b""), "-p", "canonicalize,cse,dce")
    assert r.rc == 0, r
    assert r.out.strip() == "builtin.module {\n}"


def test_output_file(tmp_path):
    src = write(tmp_path, VALID)
    out = tmp_path / "out.mlir"
    r = run_opt(src, "-o", out)
    assert r.rc == 0, r
    assert r.out == ""
    assert out.read_text() == run_opt(src).out


def test_output_file_in_missing_directory(tmp_path):
    r = run_opt(write(tmp_path, VALID), "-o", tmp_path / "no-such-dir" / "out.mlir")
    assert_diagnostic(r, "No such file or directory", "no-such-dir")


# ------------------------------------------------------------------ split input

SPLIT = """\
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tk.neg %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// -----
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tk.relu %x : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// -----
"""


def test_split_input_file(tmp_path):
    src = write(tmp_path, SPLIT)
    r = run_opt(src, "--split-input-file")
    assert r.rc == 0, r
    chunks = r.out.split("// -----\n")
    assert len(chunks) == 3
    assert "@a" in chunks[0] and "@b" not in chunks[0]
    assert "@b" in chunks[1] and "@a" not in chunks[1]
    assert chunks[2].strip() == "builtin.module {\n}"
    # Without the flag the markers are comments: one module with both functions.
    whole = run_opt(src)
    assert whole.rc == 0 and whole.out.count("builtin.module") == 1 and "@b" in whole.out


def test_split_input_file_reports_lines_of_the_whole_file(tmp_path):
    text = SPLIT + "func.func @c(%x: tensor<4xf32>) {\n  %0 = tk.neg %x : tensor<5xf32>\n  func.return\n}\n"
    r = run_opt(write(tmp_path, text), "--split-input-file")
    assert_diagnostic(r, "parse error", "in.mlir:12:")
    assert "@a" in r.out and "@b" in r.out  # the chunks before the bad one were printed


def test_split_input_file_verify_diagnostics_checks_every_chunk(tmp_path):
    text = """\
func.func @one(%x: tensor<4xf32>) {
  %0 = tk.sum %x axes [1] : tensor<4xf32> -> tensor<f32>
  func.return
}
// -----
func.func @two(%x: tensor<4x8xf32>) {
  %0 = tk.transpose %x perm [0, 0] : tensor<4x8xf32> -> tensor<4x4xf32>
  func.return
}
// -----
func.func @ok(%x: tensor<4xf32>) {
  func.return
}
"""
    r = run_opt(write(tmp_path, text), "--split-input-file", "--verify-diagnostics")
    assert r.rc == 0, r
    assert "tk.sum: axes [1] must be distinct and in [0, 1)" in r.out
    assert "tk.transpose: perm [0, 0] is not a permutation of 2 axes" in r.out
    assert "func.func @ok" in r.out


# ---------------------------------------------------------------- malformed IR

MALFORMED = {
    "syntax": (
        "func.func @f(%a: tensor<4xf32>) {\n  %0 = tk.add %a %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n}\n",
        ["parse error", "in.mlir:2:18", "Expected ','"],
    ),
    "unbalanced": (
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a : tensor<4xf32>\n",
        ["parse error", "in.mlir:"],
    ),
    "unknown_op_custom": (
        "func.func @f(%a: tensor<4xf32>) {\n  %0 = tk.cosh %a : tensor<4xf32>\n  func.return\n}\n",
        ["parse error", "in.mlir:2:", "Operation tk.cosh is not registered"],
    ),
    "unknown_op_generic": (
        '%0 = "tk.cosh"() : () -> tensor<4xf32>\n',
        ["parse error", "in.mlir:1:", "Operation tk.cosh is not registered"],
    ),
    "unknown_dialect": (
        '%0 = "arith.constant"() <{value = 1.0 : f32}> : () -> f32\n',
        ["parse error", "Operation arith.constant is not registered"],
    ),
    "unknown_dialect_custom": (
        "func.func @f(%a: tensor<4xf32>) {\n  mystery.op %a : tensor<4xf32>\n  func.return\n}\n",
        ["parse error", "Operation mystery.op is not registered"],
    ),
    "unknown_type": (
        "func.func @f(%a: !mystery.t) {\n  func.return\n}\n",
        ["parse error", "in.mlir:1:"],
    ),
    "type_mismatch": (
        "func.func @f(%a: tensor<4xf32>) {\n  %0 = tk.neg %a : tensor<4xbf16>\n  func.return\n}\n",
        ["parse error", "in.mlir:2:15", "operand is used with type tensor<4xbf16>"],
    ),
    "return_type_mismatch": (
        "func.func @f(%a: tensor<4xf32>) -> tensor<4xbf16> {\n  func.return %a : tensor<4xf32>\n}\n",
        ["invalid IR", "func.return"],
    ),
    "undefined_value": (
        "func.func @f(%a: tensor<4xf32>) {\n  %0 = tk.neg %b : tensor<4xf32>\n  func.return\n}\n",
        ["parse error", "values used but not defined: [%b]"],
    ),
    "redefined_value": (
        "func.func @f(%a: tensor<4xf32>) {\n  %0 = tk.neg %a : tensor<4xf32>\n"
        "  %0 = tk.neg %a : tensor<4xf32>\n  func.return\n}\n",
        ["parse error", "in.mlir:3:", "%0"],
    ),
    "verifier": (
        "func.func @f(%a: tensor<4x8xf32>, %b: tensor<7xf32>) {\n"
        "  %r = tk.add %a, %b : (tensor<4x8xf32>, tensor<7xf32>) -> tensor<4x8xf32>\n  func.return\n}\n",
        [
            "error: invalid IR: tk.add: shapes [4, 8] and [7] do not broadcast",
            '%r = "tk.add"(%a, %b)',  # the failing op, in the annotated IR
            "^^^^",
            "| Operation does not verify: tk.add",
        ],
    ),
    "constraint_while_parsing": (
        "func.func @f(%a: tensor<?xf32>) {\n  %0 = tk.neg %a : tensor<?xf32>\n  func.return\n}\n",
        ["invalid IR", "in.mlir:2:3", "tk tensors have static shapes, got tensor<?xf32>"],
    ),
    "structural": (
        "func.func @f(%a: tensor<4xf32>) {\n  %0 = tk.fused %a : (tensor<4xf32>) -> tensor<4xf32> {\n"
        "  ^bb0(%x: tensor<4xf32>):\n    %n = tk.neg %x : tensor<4xf32>\n  }\n  func.return\n}\n",
        ["invalid IR", "terminates block", '%n = "tk.neg"(%x)', "^^^^"],
    ),
    "bad_float_literal": (
        "%0 = tk.fill 1e5 : tensor<f32>\n",
        ["parse error", "in.mlir:1:15"],
    ),
    "nul_byte": (
        "func.func @f() {\x00}\n",
        ["parse error"],
    ),
    "deep_parens": ("(" * 5000 + "\n", ["parse error"]),
    "deep_regions": (
        "func.func @f() {" + "tk.fused : () -> () {" * 2000 + "tk.yield }" * 2000 + "func.return }\n",
        ["nests too deeply"],
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_ir_gives_a_diagnostic(tmp_path, case):
    text, needles = MALFORMED[case]
    assert_diagnostic(run_opt(write(tmp_path, text)), *needles)


def test_verifier_error_with_verify_diagnostics_is_not_a_failure(tmp_path):
    text, _ = MALFORMED["verifier"]
    r = run_opt(write(tmp_path, text), "--verify-diagnostics")
    assert r.rc == 0, r
    assert "tk.add: shapes [4, 8] and [7] do not broadcast" in r.out


def test_verifier_error_in_a_long_module_shows_a_window(tmp_path):
    lines = ["func.func @f(%a: tensor<4xf32>) {"]
    lines += [f"  %v{i} = tk.neg %a : tensor<4xf32>" for i in range(100)]
    lines += ["  %bad = tk.sum %a axes [1] : tensor<4xf32> -> tensor<f32>"]
    lines += [f"  %w{i} = tk.neg %a : tensor<4xf32>" for i in range(100)]
    lines += ["  func.return", "}"]
    r = run_opt(write(tmp_path, "\n".join(lines)))
    assert_diagnostic(r, "tk.sum: axes [1] must be distinct and in [0, 1)", '%bad = "tk.sum"(%a)', "lines above")
    assert "%v0 =" not in r.err and "%w99 =" not in r.err
    assert len(r.err.splitlines()) < 50


@pytest.mark.parametrize("seed", range(6))
def test_random_bytes(tmp_path, seed):
    rng = random.Random(seed)
    data = bytes(rng.randrange(256) for _ in range(rng.randint(1, 2000)))
    r = run_opt(write(tmp_path, data))
    assert_diagnostic(r)
    assert re.search(r"error: (input is not UTF-8 text|parse error)", r.err), r


@pytest.mark.parametrize("seed", range(3))
def test_random_ascii(tmp_path, seed):
    rng = random.Random(seed)
    alphabet = "%@^(){}[]<>:,=-\"#!tkfuncsumaxe0123456789.x \n"
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(20, 600)))
    r = run_opt(write(tmp_path, text))
    assert r.rc != 0 and "Traceback" not in r.err and "error:" in r.err, r


def test_nonexistent_file(tmp_path):
    r = run_opt(tmp_path / "missing.mlir")
    assert_diagnostic(r, "No such file or directory", "missing.mlir")


def test_directory_as_input(tmp_path):
    d = tmp_path / "dir.mlir"
    d.mkdir()
    assert_diagnostic(run_opt(d), "dir.mlir")


def test_unknown_extension(tmp_path):
    assert_diagnostic(run_opt(write(tmp_path, VALID, "step.txt")), "txt")


# --------------------------------------------------------- pipelines and flags


def test_unknown_pass(tmp_path):
    r = run_opt(write(tmp_path, VALID), "-p", "canonicalize,no-such-pass")
    assert_diagnostic(r, "invalid pass pipeline", "no-such-pass", "available passes:", "canonicalize")


def test_unknown_pass_option(tmp_path):
    r = run_opt(write(tmp_path, VALID), "-p", "canonicalize{no-such-option=1}")
    assert_diagnostic(r, "invalid pass pipeline", "no_such_option")


@pytest.mark.parametrize("spec", ["canonicalize{", "cse,,dce", "canonicalize{a=}", "{x=1}"])
def test_malformed_pipeline(tmp_path, spec):
    assert_diagnostic(run_opt(write(tmp_path, VALID), "-p", spec), "invalid pass pipeline")


def test_unknown_target(tmp_path):
    r = run_opt(write(tmp_path, VALID), "-t", "no-such-target")
    assert_diagnostic(r, "no-such-target", "mlir")


def test_unknown_flag(tmp_path):
    r = run_opt(write(tmp_path, VALID), "--no-such-flag")
    assert_diagnostic(r, "unrecognized arguments: --no-such-flag")
    assert "usage: trainkernel-opt" in r.err


def test_passes_run(tmp_path):
    r = run_opt(write(tmp_path, VALID), "-p", "canonicalize,cse,dce")
    assert r.rc == 0, r
    assert "func.func @step" in r.out


def test_help_and_version():
    h = run_opt("--help")
    assert h.rc == 0 and "usage: trainkernel-opt" in h.out and "--split-input-file" in h.out
    v = run_opt("--version")
    assert v.rc == 0 and "trainkernel-opt (xdsl" in v.out


# ------------------------------------------------------ in-process, generated


def run_main(args: list[str]) -> tuple[int, str, str]:
    """main() in this process; it must return, never raise."""
    from trainkernel.tools.opt import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(args)
    return rc, out.getvalue(), err.getvalue()


# The `error: <ExceptionName>:` fallback means an exception nobody expected: a bug.
KNOWN_ERRORS = re.compile(r"error: (parse error|invalid IR|input is not UTF-8 text|input nests too deeply)")


def check_in_process(path: Path) -> None:
    rc, out, err = run_main([str(path)])
    if rc == 0:
        # Whatever was accepted prints and parses back to the same text.
        path.write_text(out)
        rc2, out2, err2 = run_main([str(path)])
        assert rc2 == 0 and out2 == out, err2
    else:
        assert KNOWN_ERRORS.match(err), err


SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

ALL_OPS = """\
func.func @all(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %h: tensor<4x8xbf16>, %s: tensor<f32>, %w: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %f = tk.fill 0.001 : tensor<f32>
  %add = tk.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %mul = tk.mul %h, %s : (tensor<4x8xbf16>, tensor<f32>) -> tensor<4x8xbf16>
  %neg = tk.neg %a : tensor<4x8xf32>
  %rg = tk.relu_grad %a, %neg : tensor<4x8xf32>
  %pow = tk.pow %a, 2.0 : tensor<4x8xf32>
  %cast = tk.cast %a : tensor<4x8xf32> to tensor<4x8xbf16>
  %mm = tk.matmul %a, %w transpose_b : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %sum = tk.sum %a axes [0] keepdim : tensor<4x8xf32> -> tensor<1x8xf32>
  %am = tk.argmax %a axes [1] : tensor<4x8xf32> -> tensor<4xi64>
  %rs = tk.reshape %sum : tensor<1x8xf32> -> tensor<8xf32>
  %ex = tk.expand %sum : tensor<1x8xf32> -> tensor<3x4x8xf32>
  %tr = tk.transpose %a perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %sl = tk.slice %a starts [1, 2] steps [1, 2] : tensor<4x8xf32> -> tensor<3x3xf32>
  %fu = tk.fused %a, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32> {
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<f32>):
    %t = tk.mul %x, %y : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    tk.yield %t : tensor<4x8xf32>
  }
  func.return %add : tensor<4x8xf32>
}
"""
TOKEN = re.compile(r'%\w+|\^bb\d|[\w.]+|"[^"]*"|->|\S')
REPLACEMENTS = [
    "", "0", "1", "-1", "2", "8", "16", "1000", "1.5", "inf", "nan", "tensor<f32>", "tensor<4x8xi64>",
    "tensor<?x8xf32>", "tensor<4x8xf64>", "tensor<0x8xf32>", "i32", "keepdim", "transpose_a", "axes", "perm",
    "[", "]", "{", "}", "(", ")", ",", ":", "tk.yield", "tk.fused", "tk.sum", "%a", "%zz", "array<f32: 1.0>",
]


def test_valid_corpus_is_valid(tmp_path):
    path = write(tmp_path, ALL_OPS)
    rc, _, err = run_main([str(path)])
    assert rc == 0, err


SEMANTIC = re.compile(r"(?<![%\w])\d+(?![\w.])|\b(?:f32|bf16|f16|i64|i1)\b| keepdim| transpose_[ab]")


@SETTINGS
@given(data=st.data())
def test_semantically_mutated_tk_programs(tmp_path, data):
    """Change sizes, list entries, element types and flags of well-formed ops: the
    text still parses, so this exercises the verifiers (and their messages)."""
    text = ALL_OPS
    for _ in range(data.draw(st.integers(1, 2))):
        matches = list(SEMANTIC.finditer(text))
        m = data.draw(st.sampled_from(matches))
        if m.group().strip().startswith(("keepdim", "transpose")):
            new = ""
        elif m.group()[0].isdigit():
            new = str(data.draw(st.sampled_from([0, 1, 2, 3, 4, 5, 8, 16])))
        else:
            new = data.draw(st.sampled_from(["f32", "bf16", "f16", "i64", "i1", "i32", "f64"]))
        text = text[: m.start()] + new + text[m.end() :]
    check_in_process(write(tmp_path, text))


@SETTINGS
@given(data=st.data())
def test_mutated_tk_programs(tmp_path, data):
    """Token-level mutations of a program using every op family: whatever comes
    out is either accepted (and round-trips) or a parse/verifier diagnostic."""
    text = ALL_OPS
    for _ in range(data.draw(st.integers(1, 3))):
        spans = [m.span() for m in TOKEN.finditer(text)]
        start, end = data.draw(st.sampled_from(spans))
        tokens = [text[a:b] for a, b in spans]
        new = data.draw(st.one_of(st.sampled_from(REPLACEMENTS), st.sampled_from(tokens)))
        text = text[:start] + new + text[end:]
    check_in_process(write(tmp_path, text))


@SETTINGS
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes(tmp_path, data):
    check_in_process(write(tmp_path, data))


SOUP = list("%@^(){}[]<>:,=-\"#!\n x4") + ["tk.add", "tk.fused", "func.func", "tensor", "f32", "1.0", "axes"]


@SETTINGS
@given(tokens=st.lists(st.sampled_from(SOUP), max_size=120))
def test_arbitrary_token_soup(tmp_path, tokens):
    check_in_process(write(tmp_path, "".join(tokens)))


# An unterminated string literal the token soup found (2026-12-02): xDSL 0.75's lexer
# rule backtracks exponentially on it (trainkernel.dialects.lexer_fix).
UNTERMINATED = '"tensor1.01.0tensortensortk.addtensor'


@pytest.mark.parametrize("text", [UNTERMINATED, "func.func @f() {\n %x = \"" + "tensor1.0" * 5000])
def test_unterminated_string_literal_is_a_prompt_parse_error(tmp_path, text):
    import time

    start = time.perf_counter()
    rc, _, err = run_main([str(write(tmp_path, text))])
    assert rc == 1 and "End of file reached before closing string literal" in err, err
    assert time.perf_counter() - start < 5.0


def test_lexer_fix_is_installed():
    from xdsl.utils.mlir_lexer import MLIRLexer

    from trainkernel.dialects import lexer_fix

    assert lexer_fix.install()
    assert MLIRLexer._unescaped_characters_regex.pattern == lexer_fix.LINEAR_STRING_LITERAL


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet='"\\nt0aF \n\x0b\x0c', max_size=14))
def test_linear_string_rule_accepts_what_xdsls_rule_accepts(text):
    # Short inputs, so xDSL's exponential rule still answers: both match the same prefix.
    from trainkernel.dialects import lexer_fix

    old = re.compile(lexer_fix.XDSL_STRING_LITERAL).match(text)
    new = re.compile(lexer_fix.LINEAR_STRING_LITERAL).match(text)
    assert (old and old.end()) == (new and new.end())
