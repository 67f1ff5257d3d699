"""Registration with Dask: automatic in either import order, never importing Dask by itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("dask.array")
pytest.importorskip("distributed")


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


CHECK = """
    import numpy as np
    import dask.array as da
    from dask.array.chunk_types import is_valid_chunk_type
    from dask.array.dispatch import concatenate_lookup, tensordot_lookup, take_lookup, einsum_lookup
    from dask.sizeof import sizeof
    import gpusparse as gs
    from gpusparse.dask import _dispatch
    assert concatenate_lookup.dispatch(gs.CSR) is _dispatch.concatenate
    assert tensordot_lookup.dispatch(gs.COO) is _dispatch.tensordot
    assert take_lookup.dispatch(gs.COO) is gs.take
    assert einsum_lookup.dispatch(gs.CSC) is gs.einsum
    assert is_valid_chunk_type(gs.COO)
    x = gs.random((6, 5), density=0.5, device="cpu", seed=0)
    assert sizeof(x) >= x.nbytes
    X = da.from_array(x, chunks=(2, 5), asarray=False)
    y = da.concatenate([X, X], axis=1).sum(axis=0).compute(scheduler="sync")
    assert isinstance(y, gs.COO) and np.allclose(y.todense(), np.tile(x.todense().sum(axis=0), 2))
"""

CHECK_DISTRIBUTED = """
    from distributed.protocol import serialize
    from distributed.protocol.cuda import cuda_serialize
    from distributed.protocol.serialize import dask_serialize
    from gpusparse.dask import _serialize
    assert dask_serialize.dispatch(gs.COO) is _serialize.dask_dumps
    assert cuda_serialize.dispatch(gs.CSR) is _serialize.cuda_dumps
    header, frames = serialize(x, serializers=("dask",))
    assert header["serializer"] == "dask", header
    from gpusparse.dask._hook import _Watcher
    assert not any(isinstance(f, _Watcher) for f in sys.meta_path), "the watcher stays after its work"
"""


def test_dask_first():
    _run("import sys\nimport dask.array\nimport distributed\nimport gpusparse\n" + textwrap.dedent(CHECK)
         + textwrap.dedent(CHECK_DISTRIBUTED))


def test_gpusparse_first():
    """``import gpusparse`` (and ``gpusparse.dask``) imports no Dask; importing Dask afterwards registers."""
    out = _run("import sys\nimport gpusparse, gpusparse.dask\n"
               "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
               "import dask.array\nimport distributed\n" + textwrap.dedent(CHECK) + textwrap.dedent(CHECK_DISTRIBUTED))
    assert out.strip() == "[]"


def test_gpusparse_between():
    """dask.array before, distributed after gpusparse (and submodules imported first)."""
    _run("import sys\nimport dask.array.core\nimport gpusparse\nimport distributed.protocol.serialize\n"
         + textwrap.dedent(CHECK) + textwrap.dedent(CHECK_DISTRIBUTED))


def test_failed_registration_warns_and_dask_still_imports():
    out = _run("""
        import warnings
        import gpusparse
        from gpusparse.dask import _dispatch
        def broken():
            raise RuntimeError("planted")
        _dispatch.register = broken
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import dask.array
        print([str(w.message) for w in caught if "gpusparse could not register" in str(w.message)])
    """)
    assert "planted" in out and "dask.array" in out


def test_explicit_register_is_idempotent():
    from dask.array.dispatch import concatenate_lookup

    import gpusparse as gs
    import gpusparse.dask as gsd
    gsd.register()
    gsd.register()
    assert concatenate_lookup.dispatch(gs.COO).__module__ == "gpusparse.dask._dispatch"
    assert set(gsd.__all__) <= set(dir(gsd))
    with pytest.raises(AttributeError, match="no attribute"):
        gsd.not_a_name  # noqa: B018
