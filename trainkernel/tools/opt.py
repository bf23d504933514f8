"""`trainkernel-opt`: xDSL's opt main with TrainKernel's dialects, passes and the
CUDA target registered.

Malformed input must end in a diagnostic and a non-zero exit, never a Python
traceback, so `main` turns every failure into one `error:` message.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from io import BytesIO

from xdsl.utils.exceptions import VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain


class TrainKernelOptMain(xDSLOptMain):
    version_format = "trainkernel-opt (xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        super().__init__(description="TrainKernel IR optimizer and lowering driver", args=args)

    def register_all_dialects(self):
        from trainkernel.dialects import DIALECTS

        for name, factory in DIALECTS.items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        from trainkernel.passes import PASSES

        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self):
        from trainkernel.targets import TARGETS

        for name, factory in TARGETS.items():
            self.available_targets[name] = factory

    def parse_chunk(self, chunk, file_extension, start_offset=0):
        # An empty file (or `--split-input-file` chunk) holding only whitespace
        # and comments is an empty module, as in mlir-opt; xDSL's parser rejects it.
        data = chunk.read()
        frontend = (self.args.frontend or file_extension).split("{")[0]
        if frontend != "mlir":
            return super().parse_chunk(BytesIO(data), file_extension, start_offset)
        if not self.args.no_implicit_module and _is_blank(data):
            from xdsl.dialects.builtin import ModuleOp

            return ModuleOp([])
        parser = _located_parser(self.ctx, data, self.get_input_name(), start_offset)
        return parser.parse_module(not self.args.no_implicit_module)

    def apply_passes(self, prog):
        try:
            super().apply_passes(prog)
        except VerifyException as exc:
            if not getattr(exc, "__notes__", None):
                _annotate_failing_op(prog, exc)
            raise


def _annotate_failing_op(module, exc: VerifyException) -> None:
    """xDSL marks the failing op in the IR for errors of an op's own verifier, but
    not for structural ones (say, a region that does not end in a terminator):
    find the op that raises this message and mark it the same way."""
    from xdsl.utils.diagnostic import Diagnostic

    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as found:
            if str(found) == str(exc) or str(exc) in str(found):
                diagnostic = Diagnostic()
                diagnostic.add_message(op, f"Operation does not verify: {exc}")
                try:
                    diagnostic.raise_exception(op, exc)
                except VerifyException:
                    return
        except Exception:
            continue


def _located_parser(ctx, data: bytes, name: str, line_offset: int):
    """xDSL's MLIR parser, except that a verifier error raised *while parsing* (a
    declarative assembly format checks operand/result constraints as it infers
    types) names the file, line and column of the op instead of nothing."""
    from xdsl.parser import Parser
    from xdsl.utils.lexer import Span

    class LocatedParser(Parser):
        def parse_operation(self):
            start = self.pos
            try:
                return super().parse_operation()
            except LocatedVerifyException:
                raise
            except VerifyException as exc:
                source = self.lexer.input
                end = max(start + 1, min(self.pos, source.get_end_of_line(start)))
                where = Span(start, end, source, line_offset).print_with_context(_message(exc))
                raise LocatedVerifyException(where) from exc

    return LocatedParser(ctx, data, name)


class LocatedVerifyException(VerifyException):
    """A verifier error found while parsing, its message led by the op's location."""


def _is_blank(data: bytes) -> bool:
    """Only whitespace and `//` comments (a `//` inside a string literal still
    leaves the text before it, so the test cannot misfire on real input)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not re.sub(r"//[^\n]*", "", text).strip()


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


# Lines of annotated IR shown on each side of the failing op.
_CONTEXT_LINES = 12


def _annotated_ir(exc: BaseException) -> str:
    """The IR that xDSL attaches to a verification error (as an exception note),
    with the failing op marked; cut to a window around the mark when long."""
    notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str) and n.strip()]
    if not notes:
        return ""
    lines = "\n".join(notes).rstrip().splitlines()
    marks = [i for i, line in enumerate(lines) if re.fullmatch(r"\s*\^+-*", line)]
    if not marks or len(lines) <= 2 * _CONTEXT_LINES + 4:
        return "\n".join(lines)
    lo = max(0, marks[0] - 1 - _CONTEXT_LINES)
    hi = min(len(lines), marks[-1] + 3 + _CONTEXT_LINES)
    head = [f"... ({lo} lines above)"] if lo else []
    tail = [f"... ({len(lines) - hi} lines below)"] if hi < len(lines) else []
    return "\n".join(head + lines[lo:hi] + tail)


def main(argv: Sequence[str] | None = None) -> int:
    from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError, VerifyException

    try:
        opt = TrainKernelOptMain(args=argv)
    except SystemExit as exc:  # argparse errors and --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except (ArgSpecParseError, ValueError) as exc:  # -p / -t specs and pass options
        text = _message(exc)
        if text.startswith("Unrecognized passes"):
            from trainkernel.passes import PASSES

            text += "\navailable passes: " + ", ".join(sorted(PASSES))
        print(f"error: invalid pass pipeline or target\n{text}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"error: {type(exc).__name__}: {_message(exc)}", file=sys.stderr)
        return 1
    try:
        opt.run()
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except ParseError as exc:
        print(f"error: parse error\n{_message(exc)}", file=sys.stderr)
        return 1
    except DiagnosticException as exc:  # verifier errors, and passes that fail
        kind = "invalid IR: " if isinstance(exc, VerifyException) else ""
        where = _annotated_ir(exc)
        print(f"error: {kind}{_message(exc)}" + (f"\n{where}" if where else ""), file=sys.stderr)
        return 1
    except ArgSpecParseError as exc:  # a target or pass spec parsed late
        print(f"error: invalid pass pipeline or target\n{_message(exc)}", file=sys.stderr)
        return 1
    except RecursionError:
        print("error: input nests too deeply to process", file=sys.stderr)
        return 1
    except UnicodeDecodeError as exc:
        print(f"error: input is not UTF-8 text ({exc.reason} at byte {exc.start})", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 1
    except Exception as exc:  # a pass or target failing on input it cannot handle
        print(f"error: {type(exc).__name__}: {_message(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.argv[0] = "trainkernel-opt"  # argparse's program name under `python -m`
    sys.exit(main())
