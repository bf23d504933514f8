"""The error types TrainKernel raises for its user (no torch or xDSL import here).

`TrainKernelError` is the base of every error that is the user's to act on: a
step that cannot be captured, a kernel that does not build, an unusable cache
location. Its message is the whole story (the `trainkernel` command line
prints it as one message, without a traceback); anything else escaping the
package is an internal bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["TrainKernelError"]


class TrainKernelError(Exception):
    """A problem the user can fix: the message says what and how."""
