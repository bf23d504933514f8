"""Capture frontend: a torch.func training step -> `tk` IR.

The public entry point is `trainkernel.capture` (defined in
`trainkernel.frontend.capture`, which imports torch and xDSL); the errors are
importable from here without either.
"""

from trainkernel.frontend.errors import CaptureError, SourceLocation, UnsupportedOpError

__all__ = ["CaptureError", "SourceLocation", "UnsupportedOpError"]
