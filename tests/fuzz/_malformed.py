"""Malformed-input cases and the child process that runs them.

A *case* is a plain dict (picklable, built in the test process): ``build``
names a builder below that makes the input from NumPy components inside the
child, ``op`` names an operation of :data:`OPERATIONS` to run on it (or is
None: the builder alone is the case), ``device`` says where. Running this
file as a script reads a pickled list of cases from stdin and writes one
JSON line per case to stdout, flushed: ``{"i": i, "start": true}`` before a
case and ``{"i": i, "status": "ok" | "raised", "type": ..., "message": ...}``
after it. A case that kills the process or hangs therefore leaves its
``start`` line as the last one, and the parent names it (see
``test_malformed.py``). So does a case after which the CUDA device no longer
synchronises (a sticky error such as an illegal address, which would fail
every later case of the process): the child writes the error to stderr and
exits with status 70.

Builders
--------
* ``coo``, ``csr``, ``csc``: the constructors with the given components and
  ``check`` (True: they must reject bad input; False: anything goes).
* ``coo_mutated``, ``compressed_mutated``: a validated construction (COO
  coalesced first when asked, so that its flags claim sorted and unique
  coordinates), then its component buffers overwritten in place.
* ``pydata_flag_lie``, ``torch_flag_lie``: peers' arrays that claim sorted,
  unique coordinates they do not have, converted.
* ``call``: a library function (``asarray``, ``fromdense``, ``from_scipy``,
  ``from_torch``, ``from_pydata``, ``from_jax``, ``reshape``,
  ``broadcast_to``) on arguments made by a named maker.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import sys
import traceback
import warnings

import numpy as np

#: The errors that say "bad input"; anything else from an operation is a failure.
ALLOWED = (ValueError, IndexError, TypeError)


# --------------------------------------------------------------------------
# Devices
# --------------------------------------------------------------------------

def _xp(device):
    from gpusparse._device import Device, xp_for
    return xp_for(Device.parse(device))


def _on(device, arr):
    """A NumPy array on ``device``; one no device can hold (objects, text) stays on the host.

    CuPy refuses such an array itself, so a caller cannot hand one over on a
    GPU: the library's own refusal of the host array is what is tested.
    """
    arr = np.asarray(arr)
    if device == "cpu" or arr.dtype.kind in "OSUVMm":
        return arr
    return _xp(device).asarray(np.asarray(arr))


# --------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------

def _coo(case):
    import gpusparse as gs
    p = case["params"]
    coords = p["coords"] if not isinstance(p["coords"], np.ndarray) else _place(case, "coords", p["coords"])
    data = p["data"] if not isinstance(p["data"], np.ndarray) else _place(case, "data", p["data"])
    return gs.COO(coords, data, p.get("shape"), fill_value=p.get("fill_value"),
                  device=p.get("device_arg"), check=p.get("check", True))


def _compressed(case, cls_name):
    import gpusparse as gs
    p = case["params"]
    parts = [_place(case, n, p[n]) if isinstance(p[n], np.ndarray) else p[n] for n in ("indptr", "indices", "data")]
    cls = getattr(gs, cls_name)
    return cls(*parts, shape=p.get("shape"), fill_value=p.get("fill_value"), device=p.get("device_arg"),
               check=p.get("check", True))


def _place(case, name, arr):
    """Components go to the case's device, except those a mixed-device case keeps on the host."""
    if name in case["params"].get("on_host", ()):
        return np.asarray(arr)
    return _on(case["device"], arr)


def _writable(arr):
    """A writable view of a component buffer.

    The accessors hand out read-only views on the CPU, but the buffers are
    shared with the arrays an array was built from (and with the tensors
    ``to_torch`` and ``to_scipy`` export), so a caller can change them
    anyway; this is how such a caller sees them.
    """
    if isinstance(arr, np.ndarray) and not arr.flags.writeable:
        arr = arr.view()
        arr.flags.writeable = True
    return arr


def _coo_mutated(case):
    import gpusparse as gs
    p = case["params"]
    x = gs.COO(_on(case["device"], p["coords"]), _on(case["device"], p["data"]), p["shape"])
    if p.get("coalesce"):
        x = x.coalesce()
    if x.coords.shape == p["new_coords"].shape:
        _writable(x.coords)[...] = _on(case["device"], p["new_coords"])
    return x


def _compressed_mutated(case):
    import gpusparse as gs
    p = case["params"]
    cls = gs.CSR if p["fmt"] == "csr" else gs.CSC
    x = cls(*(_on(case["device"], p[n]) for n in ("indptr", "indices", "data")), shape=p["shape"])
    for name in ("indptr", "indices"):
        new = p.get(f"new_{name}")
        if new is not None:
            buf = _writable(getattr(x, name))
            if buf.shape == new.shape:
                buf[...] = _on(case["device"], new.astype(buf.dtype))
    return x


def _pydata_flag_lie(case):
    import sparse

    import gpusparse as gs
    p = case["params"]
    s = sparse.COO(p["coords"], p["data"], shape=p["shape"], sorted=True, has_duplicates=False)
    return gs.from_pydata(s).to(case["device"])


def _torch_flag_lie(case):
    import torch

    import gpusparse as gs
    p = case["params"]
    t = torch.sparse_coo_tensor(torch.from_numpy(p["coords"]), torch.from_numpy(p["data"]), p["shape"],
                                is_coalesced=True, check_invariants=False)
    return gs.from_torch(t).to(case["device"])


# Makers of the foreign / odd arguments of ``call`` cases.
def _make_scipy(p):
    import scipy.sparse as sp
    fmt = p["fmt"]
    if fmt == "coo":
        m = sp.coo_array((p["data"], (p["row"], p["col"])), shape=p["shape"])
        return m
    cls = sp.csr_array if fmt == "csr" else sp.csc_array
    m = cls((p["data"], p["indices"], p["indptr"]), shape=p["shape"])
    m.indices[...] = p["indices"]  # SciPy may have checked a copy: make sure the bad values are there
    m.indptr[...] = p["indptr"]
    return m


def _make_torch(p):
    import torch
    if p["layout"] == "coo":
        return torch.sparse_coo_tensor(torch.from_numpy(p["coords"]), torch.from_numpy(p["data"]), p["shape"],
                                       check_invariants=False)
    if p["layout"] == "dense":
        return torch.from_numpy(p["data"])
    make = torch.sparse_csr_tensor if p["layout"] == "csr" else torch.sparse_csc_tensor
    return make(torch.from_numpy(p["indptr"]), torch.from_numpy(p["indices"]), torch.from_numpy(p["data"]),
                p["shape"], check_invariants=False)


def _make_pydata(p):
    import sparse
    if p["layout"] == "coo":
        s = sparse.COO(p["valid_coords"], p["data"], shape=p["shape"])
        s.coords[...] = p["coords"]
        return s
    s = sparse.GCXS((p["data"], p["indices"], p["indptr"]), shape=p["shape"], compressed_axes=(0,))
    return s


def _make_jax(p):
    from jax.experimental import sparse as jsparse
    return jsparse.BCOO((p["data"], p["indices"]), shape=p["shape"])


def _make_sparse(case):
    """A valid gpusparse array, for ``reshape`` / ``broadcast_to`` with bad shapes."""
    import gpusparse as gs
    p = case["params"]
    return gs.fromdense(_on(case["device"], p["dense"]))


_MAKERS = {"scipy": _make_scipy, "torch": _make_torch, "pydata": _make_pydata, "jax": _make_jax}


def _call(case):
    import gpusparse as gs
    p = case["params"]
    args = list(p.get("args", ()))
    if "maker" in p:
        args.insert(0, _MAKERS[p["maker"]](p["maker_params"]))
    if p["func"] in ("reshape", "broadcast_to"):
        args.insert(0, _make_sparse(case))
    elif p["func"] in ("asarray", "fromdense") and "dense_on_device" in p:
        args.insert(0, _on(case["device"], p["dense_on_device"]))
    kwargs = dict(p.get("kwargs", {}))
    if p["func"] in ("asarray", "fromdense") and "device" not in kwargs:
        kwargs["device"] = case["device"]
    return getattr(gs, p["func"])(*args, **kwargs)


def _planted(case):
    """Planted defects that check the harness itself: a segmentation fault, a hang, nothing."""
    what = case["params"]["what"]
    if what == "segfault":
        import ctypes
        ctypes.string_at(0)
    elif what == "hang":
        while True:
            pass


BUILDERS = {
    "coo": _coo,
    "csr": lambda case: _compressed(case, "CSR"),
    "csc": lambda case: _compressed(case, "CSC"),
    "coo_mutated": _coo_mutated,
    "compressed_mutated": _compressed_mutated,
    "pydata_flag_lie": _pydata_flag_lie,
    "torch_flag_lie": _torch_flag_lie,
    "call": _call,
    "planted": _planted,
}


# --------------------------------------------------------------------------
# Operations on a (possibly malformed) array
# --------------------------------------------------------------------------

def _dense(x, shape, dtype=np.float64):
    return _on(str(x.device), np.linspace(-1.0, 2.0, num=int(np.prod(shape))).reshape(shape).astype(dtype))


def _other(x):
    """A valid array of ``x``'s shape, dtype and device (a few stored entries on the diagonal)."""
    import gpusparse as gs
    dense = np.zeros(x.shape, dtype=x.dtype)
    if dense.ndim and dense.size:
        idx = np.arange(min(dense.shape))
        dense[(idx,) * dense.ndim] = 1
    return gs.fromdense(_on(str(x.device), dense), format=x.format if x.format == "coo" or dense.ndim == 2
                        else "coo")


def _materialize(result):
    """Bring a result to the host, so that a device error cannot hide behind asynchrony."""
    from gpusparse._device import to_host
    from gpusparse.containers import SparseArray
    if isinstance(result, (tuple, list)):
        for r in result:
            _materialize(r)
        return
    if isinstance(result, SparseArray):
        from gpusparse.ops import convert
        for arr in convert.components(result):
            to_host(arr)
        return
    if hasattr(result, "toarray"):
        result.toarray()
        return
    if hasattr(result, "shape") and not isinstance(result, np.generic):
        to_host(result)


def _last(x):
    return max(x.ndim - 1, 0)


def _sampled_addmm(x):
    import gpusparse as gs
    m, n = x.shape[-2:]
    return gs.sampled_addmm(x, _dense(x, (m, 2)), _dense(x, (2, n)))


def _to_scipy_toarray(x):
    import gpusparse as gs
    return gs.to_scipy(x).toarray()


#: ``{name: function of the array}``: what every malformed array goes through.
OPERATIONS = {
    "todense": lambda x: x.todense(),
    "coalesce": lambda x: x.coalesce(),
    "sum": lambda x: x.sum(),
    "sum_axis0": lambda x: x.sum(axis=0),
    "sum_axis_last": lambda x: x.sum(axis=_last(x)),
    "add": lambda x: x + _other(x),
    "add_self": lambda x: x + x,
    "multiply": lambda x: x * _other(x),
    "matvec": lambda x: x @ _dense(x, (x.shape[-1],)),
    "matmat": lambda x: x @ _dense(x, (x.shape[-1], 3)),
    "spgemm": lambda x: x @ x.T,
    "tocsr": lambda x: x.tocsr(),
    "tocsc": lambda x: x.tocsc(),
    "tocoo": lambda x: x.tocoo(),
    "slice": lambda x: x[1:3],
    "slice_last": lambda x: x[..., ::2],
    "int_index": lambda x: x[1],
    "int_index_last": lambda x: x[..., 0],
    "fancy_index": lambda x: x[[0, 2, 0]],
    "transpose": lambda x: x.T,
    "reshape": lambda x: x.reshape(-1),
    "softmax": lambda x: __import__("gpusparse").softmax(x, axis=-1),
    "max": lambda x: x.max(axis=0),
    "argmax": lambda x: __import__("gpusparse").argmax(x, axis=_last(x)),
    "sparse_mask": lambda x: __import__("gpusparse").sparse_mask(_dense(x, x.shape, x.dtype), x),
    "concatenate": lambda x: __import__("gpusparse").concatenate([x, x], axis=0),
    "sampled_addmm": _sampled_addmm,
    "to_scipy_toarray": _to_scipy_toarray,
    "sin": lambda x: np.sin(x),
    "astype": lambda x: x.astype(np.float32),
}


# --------------------------------------------------------------------------
# The child process
# --------------------------------------------------------------------------

def run_case(case):
    """Build the case's input and run its operation; returns the result (raises what they raise)."""
    case = copy.deepcopy(case)  # builders share buffers with (and may change) the case's arrays
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = BUILDERS[case["build"]](case)
        if case.get("op") is None:
            _materialize(x)
            return x
        out = OPERATIONS[case["op"]](x)
        _materialize(out)
        return out


def _emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


#: Exit status of a worker whose CUDA context a case broke (see :func:`_exit_if_cuda_broken`).
CUDA_BROKEN_EXIT = 70


def _exit_if_cuda_broken(case) -> None:
    """End the process if the case left a sticky CUDA error (an illegal address, say).

    Such an error fails every later CUDA call of the process, so the cases
    after it would be blamed for it; exiting makes the parent treat the case
    as fatal (as a crash) and run the rest of the batch in a fresh process.
    """
    if not str(case.get("device", "")).startswith("cuda"):
        return
    from gpusparse._kernels.cuda._backend import cupy  # (the emulated one under emulation)
    try:
        cupy.cuda.Device().synchronize()
    except Exception as error:  # noqa: BLE001 - any failure here means the context is gone
        sys.stderr.write(f"CUDA context broken by this case: {type(error).__name__}: {error}\n")
        sys.stderr.flush()
        os._exit(CUDA_BROKEN_EXIT)


def main():
    cases = pickle.load(sys.stdin.buffer)
    for i, case in enumerate(cases):
        _emit({"i": i, "start": True})
        try:
            run_case(case)
        except BaseException as error:  # noqa: BLE001 - the parent judges every kind
            if isinstance(error, (KeyboardInterrupt, SystemExit)):
                raise
            _exit_if_cuda_broken(case)
            tb = traceback.extract_tb(error.__traceback__)
            where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
            _emit({"i": i, "status": "raised", "type": type(error).__name__,
                   "allowed": isinstance(error, ALLOWED), "message": str(error)[:400], "where": where})
        else:
            _exit_if_cuda_broken(case)
            _emit({"i": i, "status": "ok"})


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.dirname(here)]
    main()
