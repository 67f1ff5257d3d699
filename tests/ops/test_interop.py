"""Exchange with foreign arrays: the flags every importer verifies, cupyx, ``asarray`` and ``from_foreign``.

The exchange with each peer has its own module (``test_interop_<peer>.py``);
here: the pass that checks the sortedness and uniqueness a peer claims, on
every device; cupyx round trips (on a CUDA device); ``asarray`` and
``from_foreign`` recognising each type without importing any library.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _helpers import assert_dense_equal, assert_sparse_equal, check_invariants
from _interop_checks import assert_disjoint, components, ptr

import gpusparse
from gpusparse import COO, CSR, asarray
from gpusparse._device import Device, cuda_status
from gpusparse.ops.interop import from_cupyx, from_foreign, to_cupyx


@pytest.mark.parametrize("case", ["sorted unique", "sorted", "duplicates", "unsorted"])
def test_verified_flags_on_every_device(device, case):
    """The pass behind every importer's flags, on the device the data lives on."""
    from _helpers import put
    from gpusparse.ops.interop._common import verified_flags
    coords = {"sorted unique": [[0, 0, 2], [0, 1, 1]], "sorted": [[0, 0, 2], [1, 1, 1]],
              "duplicates": [[0, 2, 0], [1, 0, 1]], "unsorted": [[2, 0], [0, 1]]}[case]
    coords = np.array(coords, dtype=np.int64)
    keys = coords[0] * 2 + coords[1]
    expected = (bool((np.diff(keys) >= 0).all()), bool((np.diff(keys) > 0).all()))
    assert verified_flags(put(coords, device), (3, 2), device, sorted=True, unique=True) == expected
    assert verified_flags(put(coords, device), (3, 2), device, sorted=False, unique=False) == (False, False)


# --------------------------------------------------------------------------
# cupyx (needs a CUDA device)
# --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def csp():
    module = pytest.importorskip("cupyx.scipy.sparse")
    if cuda_status().device_count == 0:
        pytest.skip(f"no CUDA device: {cuda_status().reason}")
    return module


def cupy_ptr(arr) -> int:
    return arr.data.ptr


@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["coo", "csr", "csc"])
@pytest.mark.parametrize("dtype", ["bool", "float32", "float64", "complex64", "complex128"])
def test_cupyx_round_trip(csp, fmt, dtype, rng):
    import cupy
    dense = ((rng.random((6, 5)) < 0.4) * rng.integers(1, 9, size=(6, 5))).astype(dtype)
    where = np.nonzero(dense)
    x = COO(np.array(where), dense[where], shape=dense.shape, device="cuda").coalesce().asformat(fmt)
    m = to_cupyx(x, copy=False, kind="array") if fmt == "coo" else to_cupyx(x, copy=False)
    assert m.format == fmt and bool(m.has_canonical_format)
    assert_dense_equal(cupy.asnumpy(m.toarray()), dense)
    back = from_cupyx(m, copy=False)
    for a, b in zip(components(back), components(x)):
        if a.size:
            assert cupy_ptr(a) == cupy_ptr(b)
    assert_sparse_equal(back, dense)
    made = csp.csr_matrix(cupy.asarray(dense)).asformat(fmt)
    y = from_cupyx(made)
    assert y.device == Device("cuda", 0)
    assert_sparse_equal(y, dense)
    if fmt != "coo":
        assert cupy_ptr(from_cupyx(made, copy=False).data) == cupy_ptr(made.data)
    copied = from_cupyx(made, copy=True)
    assert cupy_ptr(copied.data) != cupy_ptr(made.data)


def test_cupyx_refuses_host_arrays():
    pytest.importorskip("cupyx.scipy.sparse")
    x = CSR([0, 1], [0], [1.0], shape=(1, 1), device="cpu")
    with pytest.raises(ValueError, match=r"x.to\('cuda'\)"):
        to_cupyx(x)


# --------------------------------------------------------------------------
# asarray and from_foreign
# --------------------------------------------------------------------------

def foreign_examples():
    """(library, factory) pairs; each factory makes a sparse array of 2x3 with 2 entries."""
    dense = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]], dtype=np.float32)

    def torch_coo():
        torch = pytest.importorskip("torch")
        return torch.from_numpy(dense).to_sparse()

    def torch_csr():
        torch = pytest.importorskip("torch")
        return torch.from_numpy(dense).to_sparse_csr()

    def scipy_csc():
        return pytest.importorskip("scipy.sparse").csc_matrix(dense)

    def pydata_coo():
        return pytest.importorskip("sparse").COO.from_numpy(dense)

    def jax_bcoo():
        pytest.importorskip("jax")
        return pytest.importorskip("jax.experimental.sparse").BCOO.fromdense(dense)

    return dense, {"torch-coo": torch_coo, "torch-csr": torch_csr, "scipy-csc": scipy_csc,
                   "pydata-coo": pydata_coo, "jax-bcoo": jax_bcoo}


@pytest.mark.parametrize("name", sorted(foreign_examples()[1]))
def test_asarray_recognises_foreign_arrays(name):
    dense, factories = foreign_examples()
    obj = factories[name]()
    x = asarray(obj)
    check_invariants(x)
    assert_sparse_equal(x, dense)
    assert x.format == name.split("-")[1].replace("bcoo", "coo")
    y = from_foreign(obj)
    assert type(y) is type(x)
    assert_dense_equal(asarray(obj, format="csr").todense(), dense)


def test_asarray_copy_is_passed_to_the_converter():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.csr_array(np.array([[0.0, 1.0], [2.0, 0.0]]))
    shared = asarray(m, copy=False)
    assert ptr(shared.data) == ptr(m.data) and ptr(shared.indptr) == ptr(m.indptr)
    copied = asarray(m, copy=True)
    assert_disjoint(copied, [m.indptr, m.indices, m.data])
    with pytest.raises(ValueError, match="copy=False"):
        asarray(m.tocoo(), copy=False)


def test_from_foreign_ignores_dense_input():
    assert from_foreign(np.eye(2)) is None
    assert from_foreign([[1, 0], [0, 1]]) is None
    assert from_foreign(3.0) is None
    torch = pytest.importorskip("torch")
    assert from_foreign(torch.eye(2)) is None
    jnp = pytest.importorskip("jax.numpy")
    assert from_foreign(jnp.eye(2)) is None


def test_from_foreign_tolerates_unrelated_modules_named_like_peers(monkeypatch):
    import types
    monkeypatch.setitem(sys.modules, "sparse", types.ModuleType("sparse"))
    assert from_foreign(np.eye(2)) is None


def test_from_foreign_imports_nothing():
    """gpusparse never imports a peer library to recognise an object."""
    script = textwrap.dedent(
        """
        import importlib.abc, os, sys, traceback
        import numpy as np

        PEERS = ("torch", "jax", "jaxlib", "sparse", "scipy.sparse", "cupyx", "cupyx.scipy.sparse")
        importers = {}

        class Watch(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name in PEERS and name not in importers:
                    frames = [f for f in traceback.extract_stack()[:-1] if "importlib" not in f.filename]
                    importers[name] = frames[-1].filename if frames else "?"
                return None

        sys.meta_path.insert(0, Watch())
        import gpusparse as gs
        from gpusparse.ops.interop import from_foreign
        x = gs.asarray(np.eye(3))
        assert x.nnz == 3
        assert all(from_foreign(o) is None for o in (np.eye(2), [1, 2], 3.0, "text", None))
        package = os.path.dirname(gs.__file__)
        print("peers imported by gpusparse:",
              sorted(n for n, f in importers.items() if f.startswith(package)))
        print("torch" in sys.modules, "jax" in sys.modules)
        """
    )
    root = os.path.dirname(os.path.dirname(gpusparse.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         check=False)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-2] == "peers imported by gpusparse: []", out.stdout + out.stderr
    assert lines[-1] == "False False", out.stdout + out.stderr
