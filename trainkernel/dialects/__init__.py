"""Dialects of TrainKernel, registered lazily (as xDSL's own universe does)."""

from collections.abc import Callable

from xdsl.ir import Dialect

from trainkernel.dialects import lexer_fix

# Every parser of TrainKernel IR (parse_module, trainkernel-opt, capture's own
# round trips) is made through this package, so the lexer is fixed here once.
lexer_fix.install()


def _tk() -> Dialect:
    from trainkernel.dialects.tk import TK

    return TK


def _sched() -> Dialect:
    from trainkernel.dialects.sched import SCHED

    return SCHED


def _tile() -> Dialect:
    from trainkernel.dialects.tile import TILE

    return TILE


def _builtin() -> Dialect:
    from xdsl.dialects.builtin import Builtin

    return Builtin


def _func() -> Dialect:
    from xdsl.dialects.func import Func

    return Func


# Every dialect a TrainKernel IR file may use, by name.
DIALECTS: dict[str, Callable[[], Dialect]] = {
    "builtin": _builtin,
    "func": _func,
    "tk": _tk,
    "sched": _sched,
    "tile": _tile,
}


def make_context():
    """An xDSL context with every TrainKernel dialect registered (loaded lazily)."""
    from xdsl.context import Context

    ctx = Context()
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx
