"""The former module of the shape operations, now :mod:`gpusparse.ops.shape`: the same names.

Kept as an import path for code written against it
(``from gpusparse.ops import manipulation``).
"""

from gpusparse.ops.shape import *  # noqa: F401,F403  (the public names)
from gpusparse.ops.shape import __all__  # noqa: F401
from gpusparse.ops.shape.joining import _atleast  # noqa: F401  (used by the NumPy functions)
