"""`trainkernel-opt`: xDSL's opt main with TrainKernel's dialects, passes and the
CUDA target registered.

Malformed input must end in a diagnostic and a non-zero exit, never a Python
traceback, so `main` turns every failure into one `error:` message.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

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


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

    try:
        opt = TrainKernelOptMain(args=argv)
        opt.run()
    except SystemExit as exc:  # argparse errors and --help
        return int(exc.code or 0) if not isinstance(exc.code, str) else 1
    except ParseError as exc:
        print(f"error: parse error\n{_message(exc)}", file=sys.stderr)
        return 1
    except (VerifyException, DiagnosticException) as exc:
        print(f"error: invalid IR\n{_message(exc)}", file=sys.stderr)
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
    sys.exit(main())
