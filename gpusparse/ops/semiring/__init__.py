"""GraphBLAS-style operations: semiring products with masks, element-wise union / intersection, select, apply.

Names follow python-graphblas (``mxm``, ``mxv``, ``ewise_add``,
``ewise_mult``, ``select``, ``apply``; semirings such as ``"min_plus"``).
docs/graphblas.md maps python-graphblas calls to gpusparse's.
"""

from gpusparse.ops.semiring._defs import SEMIRINGS, Semiring, identity, parse
from gpusparse.ops.semiring.ewise import BINARY_OPS, SELECT_OPS, UNARY_OPS, apply, ewise_add, ewise_mult, select
from gpusparse.ops.semiring.products import mxm, mxv

__all__ = ["BINARY_OPS", "SELECT_OPS", "SEMIRINGS", "Semiring", "UNARY_OPS", "apply", "ewise_add", "ewise_mult",
           "identity", "mxm", "mxv", "parse", "select"]
