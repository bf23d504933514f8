"""Errors of the capture frontend (no torch import here)."""

from __future__ import annotations

from dataclasses import dataclass

from trainkernel.errors import TrainKernelError


@dataclass(frozen=True)
class SourceLocation:
    """One frame of the user's code: where an op came from."""

    filename: str
    lineno: int
    function: str = ""
    line: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"


class CaptureError(TrainKernelError):
    """The step (or its example arguments) cannot be captured."""


class UnsupportedOpError(CaptureError):
    """An aten op that `tk` cannot express (or can only express for other
    arguments). Names the op and the user's source line that produced it:

        tests/test_capture.py:42: error: unsupported op aten.sigmoid.default
            h = torch.sigmoid(x @ w)
          (in loss_fn) ...

    Attributes: `op` (e.g. "aten.sigmoid.default"), `location`
    (SourceLocation or None), `reason` (extra detail or "").
    """

    def __init__(self, op: str, location: SourceLocation | None = None, reason: str = ""):
        self.op = op
        self.location = location
        self.reason = reason
        super().__init__(self._format())

    def _format(self) -> str:
        where = f"{self.location}: " if self.location is not None else "<unknown source line>: "
        text = f"{where}error: unsupported op {self.op}"
        if self.reason:
            text += f": {self.reason}"
        if self.location is not None:
            if self.location.line:
                text += f"\n    {self.location.line.strip()}"
            if self.location.function:
                text += f"\n  (in {self.location.function})"
        return text
