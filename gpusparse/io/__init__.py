"""Reading and writing sparse arrays: npz, Matrix Market, binsparse.

Parsing is delegated to well-kept engines -- NumPy's ``.npz`` archives,
`fast_matrix_market <https://github.com/alugowski/fast_matrix_market>`_ for
Matrix Market text, h5py for binsparse's HDF5 files -- and this package maps
their components to gpusparse containers on the requested device.

Importing :mod:`gpusparse.io` imports none of the engines: each function
imports its own on first use and raises ``ImportError`` naming the ``io``
extra (``pip install "gpusparse[io]"``) when it is missing.

=======================  ==================================  ==========================
format                   read                                write
=======================  ==================================  ==========================
``.npz`` (SciPy/pydata)  :func:`load_npz`                    :func:`save_npz`
Matrix Market            :func:`mmread`, :func:`mminfo`      :func:`mmwrite`
binsparse (HDF5)         :func:`read_binsparse`              :func:`write_binsparse`
=======================  ==================================  ==========================

Bad files raise :class:`FileFormatError` (a ``ValueError``) naming the file
and the line or field at fault; writes to a path are atomic.
"""

from gpusparse.io._binsparse import read_binsparse, write_binsparse
from gpusparse.io._common import FileFormatError
from gpusparse.io._matrix_market import mminfo, mmread, mmwrite
from gpusparse.io._npz import load_npz, save_npz

__all__ = [
    "FileFormatError",
    "load_npz",
    "mminfo",
    "mmread",
    "mmwrite",
    "read_binsparse",
    "save_npz",
    "write_binsparse",
]
