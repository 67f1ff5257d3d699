"""Exchange with the other sparse array libraries, without copying where the layouts allow.

One module per library, each with a ``from_*`` and a ``to_*`` function:

============  ==========================================  =====================================
module        peer types                                   shared without copying
============  ==========================================  =====================================
``_torch``    torch sparse COO (hybrid), CSR, CSC          every component, both ways
``_scipy``    scipy.sparse COO, CSR, CSC arrays/matrices   CSR/CSC both ways; COO data, and
                                                           COO coordinates on export
``_cupyx``    cupyx.scipy.sparse COO, CSR, CSC             CSR/CSC both ways; as SciPy for COO
``_pydata``   pydata ``sparse.COO`` and 2-D ``GCXS``       every component, both ways
``_jax``      ``jax.experimental.sparse`` BCOO, BCSR       BCOO values and BCSR on import;
                                                           export always copies (immutable)
============  ==========================================  =====================================

Every function takes ``copy``: ``True`` always copies, ``None`` copies only
what the layouts force, ``False`` raises ``ValueError`` saying why a copy is
unavoidable. Components travel through DLPack, so arrays stay on their
device: CPU peers give NumPy components, CUDA peers CuPy ones. Nothing moves
between host and device implicitly.

:func:`from_foreign` recognises a peer's sparse array through
``sys.modules`` alone: a library that has not been imported cannot have made
``obj``, so nothing is ever imported to find out.
"""

from __future__ import annotations

from gpusparse.ops.interop._cupyx import from_cupyx, is_cupyx_sparse, to_cupyx
from gpusparse.ops.interop._jax import from_jax, is_jax_sparse, to_jax
from gpusparse.ops.interop._pydata import from_pydata, is_pydata_sparse, to_pydata
from gpusparse.ops.interop._scipy import from_scipy, is_scipy_sparse, to_scipy
from gpusparse.ops.interop._torch import from_torch, is_torch_sparse, to_torch

__all__ = [
    "from_cupyx",
    "from_foreign",
    "from_jax",
    "from_pydata",
    "from_scipy",
    "from_torch",
    "to_cupyx",
    "to_jax",
    "to_pydata",
    "to_scipy",
    "to_torch",
]

#: (recogniser, converter), tried in order by :func:`from_foreign`.
_PEERS = (
    (is_torch_sparse, from_torch),
    (is_scipy_sparse, from_scipy),
    (is_cupyx_sparse, from_cupyx),
    (is_pydata_sparse, from_pydata),
    (is_jax_sparse, from_jax),
)


def from_foreign(obj, copy=None):
    """A gpusparse array for a sparse array of another library, or None if ``obj`` is not one.

    Recognises torch sparse tensors, scipy.sparse and cupyx.scipy.sparse
    arrays and matrices, pydata ``sparse`` arrays and JAX BCOO/BCSR arrays,
    looking only at libraries already in ``sys.modules``: it never imports
    one. Dense input (NumPy, CuPy, strided torch tensors, JAX arrays, lists)
    gives None.

    Parameters
    ----------
    obj : object
        Anything.
    copy : bool, optional
        As for the ``from_*`` converters: ``True`` always copies, ``None``
        copies only where the layouts force it, ``False`` raises
        ``ValueError`` where a copy is unavoidable.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from gpusparse.ops.interop import from_foreign
    >>> from_foreign(sp.coo_array(np.eye(2))).format
    'coo'
    >>> from_foreign(np.eye(2)) is None
    True
    """
    for recognises, convert in _PEERS:
        if recognises(obj):
            return convert(obj, copy=copy)
    return None
