"""Warnings gpusparse raises.

:class:`GpuSparseEfficiencyWarning` marks a slow path taken for a reason the
caller controls -- a dtype the fast library routine does not take, an
operand that has to be sorted again on every call -- and says how to get
the fast path. It never marks a wrong result: silence it with the
:mod:`warnings` filters when the slow path is acceptable.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["GpuSparseEfficiencyWarning", "warn_efficiency"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class GpuSparseEfficiencyWarning(UserWarning):
    """A slower path was taken; the message says why and how to avoid it.

    Examples
    --------
    >>> import warnings
    >>> from gpusparse._errors import GpuSparseEfficiencyWarning
    >>> warnings.simplefilter("ignore", GpuSparseEfficiencyWarning)
    """


def _user_stacklevel() -> int:
    """The ``stacklevel`` that points at the first frame outside gpusparse."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


def warn_efficiency(message: str) -> None:
    """Emit :class:`GpuSparseEfficiencyWarning` attributed to the user's line of code."""
    warnings.warn(message, GpuSparseEfficiencyWarning, stacklevel=_user_stacklevel())
