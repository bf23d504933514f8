"""Canonicalization patterns for `tk`, picked up by xDSL's `canonicalize` pass
through the TkCanonicalization trait. (Filled in by the tk pass set.)"""

from xdsl.pattern_rewriter import RewritePattern

PATTERNS: dict[str, tuple[RewritePattern, ...]] = {}


def patterns_for(op_name: str) -> tuple[RewritePattern, ...]:
    return PATTERNS.get(op_name, ())
