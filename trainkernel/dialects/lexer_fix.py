"""A linear-time string-literal rule for xDSL's MLIR lexer.

xDSL 0.75's lexer matches a string literal with
``"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"``: a ``+`` inside a ``*``,
so a run of ordinary characters can be split into iterations in exponentially
many ways, and an *unterminated* literal makes Python's backtracking engine try
them all before it fails. 30 characters after a stray ``"`` took seconds, 37
did not finish (``xdsl-opt`` itself hangs the same way). Without the inner
``+`` each character is matched by exactly one branch (a plain character never
starts with a backslash, and the escapes after one are disjoint), so a failing
match backs off once per character: the same language, in linear time.
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

# The rule as xDSL 0.75 spells it; another spelling (a later xDSL) is left alone.
XDSL_STRING_LITERAL = r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
LINEAR_STRING_LITERAL = r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'


def install() -> bool:
    """Give MLIRLexer the linear rule if it still has the exponential one; True if it
    has the linear rule afterwards."""
    current = MLIRLexer._unescaped_characters_regex.pattern
    if current == XDSL_STRING_LITERAL:
        MLIRLexer._unescaped_characters_regex = re.compile(LINEAR_STRING_LITERAL)
        return True
    return current == LINEAR_STRING_LITERAL
