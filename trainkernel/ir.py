"""Parse and print TrainKernel IR text."""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.printer import Printer


def parse_module(text: str, name: str = "<string>") -> ModuleOp:
    from trainkernel.dialects import make_context

    module = Parser(make_context(), text, name).parse_module()
    module.verify()
    return module


def print_module(module: ModuleOp, generic: bool = False) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue() + "\n"
