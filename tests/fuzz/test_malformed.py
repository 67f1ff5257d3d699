"""Malformed input: rejected with a clear error when checked, never fatal when not.

Two contracts, run in child processes so that a crash cannot take pytest
down with it:

* **Checked input** (every constructor and converter with its default
  ``check=True``; ``reshape``/``broadcast_to`` with bad shapes): wrong
  dtypes, mismatched lengths, negative, huge or out-of-range coordinates and
  indices, non-monotone ``indptr``, NaN shapes, wrong ``ndim``, mixed
  devices must raise ``TypeError``, ``ValueError`` or ``IndexError``, and
  where one argument is at fault the message names it.
* **Unchecked input** (``check=False``, component buffers overwritten after
  a validated construction, peers' arrays whose flags lie): every operation
  of :data:`_malformed.OPERATIONS` either raises one of those errors or
  returns a result -- it never kills the process and never hangs (the
  memory-safety contract of the primitive layer: out-of-range reads are
  clipped, out-of-range writes dropped).

Cases are batched, many per child process. When a child dies by a signal or
stops answering, the case it was running is re-run alone in a fresh process
(and, if it survives alone, the earlier cases of the batch one by one), so
the failure names the culprit and the signal. Malformed components are drawn
by Hypothesis (derandomised under the ``ci`` profile) on top of a fixed list.
"""

from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import importlib.util
import json
import math
import os
import pickle
import selectors
import signal
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from _malformed import OPERATIONS
from gpusparse._kernels import cuda_emulation

#: Peers whose packages are missing here: their cases are left out (makers and flag lies need them).
_MISSING_PEERS = frozenset(peer for peer, module in (("pydata", "sparse"), ("torch", "torch"))
                           if importlib.util.find_spec(module) is None)
_PEERS = [peer for peer in ("pydata", "torch") if peer not in _MISSING_PEERS]

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "_malformed.py")
#: Seconds a single case may take (Numba may compile a kernel on its first call).
CASE_TIMEOUT = float(os.environ.get("GPUSPARSE_FUZZ_CASE_TIMEOUT", "120"))
#: Cases per child process.
BATCH = 400

BIG = [10**6, 2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1]
NEG = [-1, -2, -(10**6), -(2**31), -(2**63)]


# --------------------------------------------------------------------------
# Running cases in child processes
# --------------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
    """What became of one case: ``status`` is ok, raised, signal or timeout."""

    status: str
    type: str = ""
    message: str = ""
    allowed: bool = True
    where: str = ""
    stderr: str = ""
    isolated: bool = False  # reproduced alone in a fresh process

    def describe(self) -> str:
        if self.status == "raised":
            return f"raised {self.type} at {self.where}: {self.message}"
        if self.status in ("signal", "timeout"):
            alone = "alone" if self.isolated else "after the earlier cases of its batch"
            tail = f"; stderr: {self.stderr[-300:]!r}" if self.stderr.strip() else ""
            return f"{self.message} ({alone}){tail}"
        return "returned"


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def _run_child(cases, timeout):
    """Run ``cases`` in one child; returns ``(outcomes, stopped_at, fatal)``.

    ``outcomes`` holds one :class:`Outcome` per finished case; ``stopped_at``
    is the index of the case during which the child died or hung (None if it
    finished), ``fatal`` the :class:`Outcome` describing that.
    """
    env = dict(os.environ)
    env.setdefault("PYTHONFAULTHANDLER", "1")
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=err, env=env, cwd=os.path.dirname(os.path.dirname(HERE)))
        try:
            proc.stdin.write(pickle.dumps(cases))
            proc.stdin.close()
        except BrokenPipeError:
            pass
        outcomes, current = [], None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        fatal = None
        try:
            while True:
                if not sel.select(timeout):
                    proc.kill()
                    proc.wait()
                    fatal = Outcome("timeout", message=f"no answer within {timeout:.0f} s (hang?)")
                    break
                line = proc.stdout.readline()
                if not line:
                    rc = proc.wait()
                    if current is not None or rc != 0:
                        how = _signal_name(rc) if rc < 0 else f"exit status {rc}"
                        fatal = Outcome("signal", message=f"the process died: {how}")
                    break
                msg = json.loads(line)
                if msg.get("start"):
                    current = msg["i"]
                    continue
                outcomes.append(Outcome(msg["status"], msg.get("type", ""), msg.get("message", ""),
                                        msg.get("allowed", True), msg.get("where", "")))
                current = None
        finally:
            sel.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        if fatal is not None:
            err.seek(0)
            fatal.stderr = err.read().decode(errors="replace")[-2000:]
            if current is None and not outcomes and fatal.status == "signal":
                raise RuntimeError(f"the worker died before its first case: {fatal.message}\n{fatal.stderr}")
        stopped = None if fatal is None else (current if current is not None else len(outcomes))
        return outcomes, stopped, fatal


def _run_batch(cases, timeout=CASE_TIMEOUT):
    """Outcomes of ``cases``, run in as few children as crashes allow; culprits re-run alone."""
    results = [None] * len(cases)
    start = 0
    while start < len(cases):
        outcomes, stopped, fatal = _run_child(cases[start:], timeout)
        for k, outcome in enumerate(outcomes):
            results[start + k] = outcome
        if fatal is None:
            break
        culprit = start + stopped
        if culprit >= len(cases):  # died after the last case (at exit)
            break
        _, again, alone = _run_child([cases[culprit]], timeout)
        if alone is not None:
            alone.isolated = True
            results[culprit] = alone
        else:  # harmless alone: an earlier case of this child corrupted something; find it
            fatal.isolated = False
            results[culprit] = fatal
            for j in range(start, culprit):
                _, _, earlier = _run_child([cases[j]], timeout)
                if earlier is not None:
                    earlier.isolated = True
                    results[j] = earlier
        start = culprit + 1
    return results


def run_cases(cases):
    """Outcomes of every case, batches run in parallel on the available cores."""
    batches = [cases[i:i + BATCH] for i in range(0, len(cases), BATCH)]
    if len(batches) == 1 and len(cases) > 40:  # split anyway: two cores beat one
        half = len(cases) // 2
        batches = [cases[:half], cases[half:]]
    jobs = max(1, min(len(batches), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        parts = list(pool.map(_run_batch, batches))
    return [o for part in parts for o in part]


# --------------------------------------------------------------------------
# Hypothesis: collecting drawn cases (they run in batches afterwards)
# --------------------------------------------------------------------------

def draw_many(strategy, n):
    """``n`` examples of ``strategy`` under the current profile (derandomised under ``ci``)."""
    found = []

    @settings(settings.default, max_examples=n, database=None, phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck), deadline=None)
    @given(strategy)
    def collect(value):
        found.append(value)

    collect()
    return found


def _budget(per_example: float, least: int, most: int) -> int:
    return int(min(most, max(least, settings.default.max_examples * per_example)))


def garbage(limit):
    """An index value: mostly inside ``[0, limit)``, sometimes just outside, negative or huge."""
    inside = st.integers(0, max(limit - 1, 0))
    return st.one_of(inside, inside, st.integers(limit, limit + 3), st.sampled_from(BIG + NEG),
                     st.integers(-(2**63), 2**63 - 1))


@st.composite
def _valid_entries(draw, shape, max_nnz=8):
    size = math.prod(shape)
    keys = draw(st.lists(st.integers(0, size - 1), max_size=max_nnz)) if size else []
    coords = np.array(np.unravel_index(np.asarray(keys, dtype=np.intp), shape), dtype=np.int64).reshape(
        len(shape), len(keys))
    return coords


_SHAPES_2D = st.tuples(st.integers(0, 5), st.integers(0, 5))
_SHAPES = st.one_of(_SHAPES_2D, _SHAPES_2D, st.tuples(st.integers(1, 5)), st.tuples(*[st.integers(1, 3)] * 3))


def _data(nnz, dtype=np.float64):
    return np.linspace(0.5, 3.0, num=nnz).astype(dtype)


@st.composite
def malformed_arrays(draw):
    """``(label, build, params)`` for an array whose components break the container's promises."""
    how = draw(st.sampled_from(["coo", "coo_mutated", "compressed", "compressed_mutated"]
                               + (["flag_lie"] if _PEERS else [])))
    dtype = draw(st.sampled_from([np.float64, np.float64, np.float64, np.float32, np.int64, np.complex128,
                                  np.bool_]))
    if how in ("coo", "coo_mutated", "flag_lie"):
        shape = draw(_SHAPES)
        nnz = draw(st.integers(0, 8))
        if how == "coo":
            coords = np.array([[draw(garbage(n)) for _ in range(nnz)] for n in shape], dtype=np.int64)
            coords = coords.reshape(len(shape), nnz)
            cdtype = draw(st.sampled_from([np.int64, np.int64, np.int32, np.uint64]))
            params = {"coords": coords.astype(cdtype), "data": _data(nnz, dtype), "shape": shape, "check": False}
            return f"COO(check=False, shape={shape}, coords={coords.tolist()}, {cdtype.__name__})", "coo", params
        valid = draw(_valid_entries(shape))
        if how == "flag_lie":  # in range, but unsorted and repeated under a coalesced flag
            if valid.shape[1]:
                order = draw(st.permutations(range(valid.shape[1])))
                valid = np.concatenate([valid[:, list(order)], valid[:, :1]], axis=1)
            peer = draw(st.sampled_from(_PEERS))
            params = {"coords": valid, "data": _data(valid.shape[1], np.float64), "shape": shape}
            return f"{peer} flag lie(shape={shape}, coords={valid.tolist()})", f"{peer}_flag_lie", params
        n = valid.shape[1]
        new = np.array([[draw(garbage(s)) for _ in range(n)] for s in shape], dtype=np.int64).reshape(len(shape), n)
        if n and draw(st.booleans()):
            new = valid + draw(st.sampled_from([10**6, -(10**6), 2**40, 2**62, 1]))
        coalesce = draw(st.booleans())
        params = {"coords": valid, "data": _data(n, dtype), "shape": shape, "coalesce": coalesce, "new_coords": new}
        return (f"COO(shape={shape}){'.coalesce()' if coalesce else ''} with coords overwritten by {new.tolist()}",
                "coo_mutated", params)
    fmt = draw(st.sampled_from(["csr", "csc"]))
    shape = draw(_SHAPES_2D)
    major, minor = (shape[0], shape[1]) if fmt == "csr" else (shape[1], shape[0])
    nnz = draw(st.integers(0, 8))
    if how == "compressed":
        ptr_value = st.one_of(st.integers(-2, nnz + 2), st.sampled_from(BIG + NEG))
        if draw(st.booleans()):
            indptr = sorted(draw(st.lists(st.integers(0, nnz), min_size=major + 1, max_size=major + 1)))
            indptr[0], indptr[-1] = 0, nnz
            if draw(st.booleans()):  # out of range, still sorted
                indptr[draw(st.integers(0, major))] = draw(st.sampled_from([nnz + 1, 2**40, -1]))
        else:
            indptr = draw(st.lists(ptr_value, min_size=major + 1, max_size=major + 1))
        indices = [draw(garbage(minor)) for _ in range(nnz)]
        idtype = draw(st.sampled_from([np.int64, np.int32]))
        params = {"indptr": np.asarray(indptr, np.int64).astype(idtype), "indices": np.asarray(indices, np.int64)
                  .astype(idtype), "data": _data(nnz, dtype), "shape": shape, "check": False}
        return (f"{fmt.upper()}(check=False, shape={shape}, indptr={indptr}, indices={indices}, "
                f"{idtype.__name__})"), fmt, params
    valid = draw(_valid_entries(shape))
    n = valid.shape[1]
    keys = np.unique(valid[0] * shape[1] + valid[1]) if n else np.zeros(0, np.int64)
    rows, cols = (keys // max(shape[1], 1), keys % max(shape[1], 1))
    maj, mnr = (rows, cols) if fmt == "csr" else (cols, rows)
    order = np.lexsort((mnr, maj))
    maj, mnr = maj[order], mnr[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(maj, minlength=major))]).astype(np.int64)
    new_indptr = new_indices = None
    if draw(st.booleans()):
        new_indptr = np.asarray([draw(st.one_of(st.integers(-2, len(keys) + 2), st.sampled_from(BIG + NEG)))
                                 for _ in range(major + 1)], np.int64)
    if not len(keys) or new_indptr is None or draw(st.booleans()):
        new_indices = np.asarray([draw(garbage(minor)) for _ in keys], np.int64)
    params = {"fmt": fmt, "indptr": indptr, "indices": mnr.astype(np.int64), "data": _data(len(keys), dtype),
              "shape": shape, "new_indptr": new_indptr, "new_indices": new_indices}
    label = (f"{fmt.upper()}(shape={shape}, indptr={indptr.tolist()}) overwritten: "
             f"indptr={None if new_indptr is None else new_indptr.tolist()}, "
             f"indices={None if new_indices is None else new_indices.tolist()}")
    return label, "compressed_mutated", params


def _fixed_malformed_arrays():
    """Hand-picked arrays every run includes: the classic ways to break each format."""
    out = []
    c = np.array([[0, 1, 2], [0, 1, 2]])
    for delta in (10**6, -(10**6), 2**62, -(2**63) + 5):
        for coalesce in (False, True):
            out.append((f"COO(eye 3x3){'.coalesce()' if coalesce else ''}; coords += {delta}", "coo_mutated",
                        {"coords": c, "data": _data(3), "shape": (3, 3), "coalesce": coalesce,
                         "new_coords": c + delta}))
    out.append(("COO(eye 3x3).coalesce(); coords reversed and repeated", "coo_mutated",
                {"coords": c, "data": _data(3), "shape": (3, 3), "coalesce": True,
                 "new_coords": np.array([[2, 2, 0], [2, 2, 0]])}))
    out.append(("COO(check=False) coords [[5, -1], [0, 9]] in 3x3", "coo",
                {"coords": np.array([[5, -1], [0, 9]]), "data": _data(2), "shape": (3, 3), "check": False}))
    indptr, indices = np.array([0, 1, 2, 3]), np.array([0, 1, 2])
    for name, bad_ptr, bad_idx in [
        ("indptr decreasing", np.array([0, 3, 1, 3]), None),
        ("indptr huge", np.array([0, 2**40, 2**40, 3]), None),
        ("indptr negative", np.array([0, -5, -5, 3]), None),
        ("indptr past nnz", np.array([0, 1, 2, 9]), None),
        ("indices out of range", None, np.array([0, 7, -3])),
        ("indices repeated, unsorted", np.array([0, 3, 3, 3]), np.array([2, 0, 2])),
    ]:
        for fmt in ("csr", "csc"):
            out.append((f"{fmt.upper()}(eye 3x3) with {name}", "compressed_mutated",
                        {"fmt": fmt, "indptr": indptr, "indices": indices, "data": _data(3), "shape": (3, 3),
                         "new_indptr": bad_ptr, "new_indices": bad_idx}))
        out.append((f"CSR(check=False) with {name}", "csr",
                    {"indptr": bad_ptr if bad_ptr is not None else indptr,
                     "indices": bad_idx if bad_idx is not None else indices, "data": _data(3), "shape": (3, 3),
                     "check": False}))
    return out


# --------------------------------------------------------------------------
# Checked input: cases that must be rejected
# --------------------------------------------------------------------------

def _coo_case(label, blame, expected, **params):
    params.setdefault("data", _data(np.asarray(params["coords"]).shape[-1] if
                                    np.asarray(params["coords"]).ndim else 1))
    return (label, "coo", params, blame, expected)


def _csr_case(label, blame, expected, fmt="csr", **params):
    params.setdefault("indptr", np.array([0, 1, 2]))
    params.setdefault("indices", np.array([1, 0]))
    params.setdefault("data", _data(len(params["indices"]) if hasattr(params["indices"], "__len__") else 2))
    params.setdefault("shape", (2, 2))
    return (label, fmt, params, blame, expected)


def _call_case(label, func, blame, expected, **params):
    return (label, "call", {"func": func, **params}, blame, expected)


def _fixed_checked_cases(cuda: bool):
    """``(label, build, params, blame, expected errors)`` of input every constructor must reject."""
    ok = np.array([[0, 1], [1, 0]])
    te, ve = "TypeError", "ValueError"
    cases = [
        _coo_case("COO coords float", "coords", (te,), coords=ok.astype(float), shape=(2, 2)),
        _coo_case("COO coords bool", "coords", (te,), coords=ok.astype(bool), shape=(2, 2)),
        _coo_case("COO coords complex", "coords", (te,), coords=ok.astype(complex), shape=(2, 2)),
        _coo_case("COO coords 3-d", "coords", (ve,), coords=np.zeros((1, 2, 2), np.int64), data=_data(2)),
        _coo_case("COO coords 0-d", "coords", (ve,), coords=np.array(0), data=_data(1)),
        _coo_case("COO coords and data lengths differ", None, (ve,), coords=ok, data=_data(3), shape=(2, 2)),
        _coo_case("COO negative coordinate", "coords", (ve,), coords=np.array([[0, -1], [0, 0]]), shape=(2, 2)),
        _coo_case("COO most negative coordinate", "coords", (ve,), coords=np.array([[0, -(2**63)]]),
                  shape=(4,)),
        _coo_case("COO coordinate past the shape", "coords", (ve,), coords=np.array([[0, 2]]), shape=(2,)),
        _coo_case("COO coordinate 2**62", "coords", (ve,), coords=np.array([[0, 2**62]]), shape=(2,)),
        _coo_case("COO uint64 coordinate 2**63 + 1", "coords", (ve,),
                  coords=np.array([[2**63 + 1]], dtype=np.uint64), shape=(4,)),
        _coo_case("COO data object", "data", (te,), coords=ok, data=np.array([1, None], dtype=object),
                  shape=(2, 2)),
        _coo_case("COO data float16", "data", (te,), coords=ok, data=np.ones(2, np.float16), shape=(2, 2)),
        _coo_case("COO data strings", "data", (te,), coords=ok, data=np.array(["a", "b"]), shape=(2, 2)),
        _coo_case("COO shape with NaN", "shape", (te,), coords=ok, shape=(float("nan"), 2)),
        _coo_case("COO shape with a float", "shape", (te,), coords=ok, shape=(2.5, 2)),
        _coo_case("COO negative shape", "shape", (ve,), coords=ok, shape=(-2, 2)),
        _coo_case("COO shape too short", "shape", (ve,), coords=ok, shape=(2,)),
        _coo_case("COO shape too long", "shape", (ve,), coords=ok, shape=(2, 2, 2)),
        _coo_case("COO shape disagrees with dense dims", "shape", (ve,), coords=np.array([[0, 1]]),
                  data=np.ones((2, 3)), shape=(2, 4)),
        _coo_case("COO fill 0.5 for integers", "fill_value", (te,), coords=ok, data=np.ones(2, np.int32),
                  shape=(2, 2), fill_value=0.5),
        _coo_case("COO fill 300 for uint8", "fill_value", (te,), coords=ok, data=np.ones(2, np.uint8),
                  shape=(2, 2), fill_value=300),
        _coo_case("COO fill 1e300 for float32", "fill_value", (te,), coords=ok, data=np.ones(2, np.float32),
                  shape=(2, 2), fill_value=1e300),
        _coo_case("COO fill a string", "fill_value", (te, ve), coords=ok, shape=(2, 2), fill_value="a"),
        _coo_case("COO fill an array", "fill_value", (ve, te), coords=ok, shape=(2, 2), fill_value=[1.0, 2.0]),
        _coo_case("COO no sparse dims, two entries", "coords", (ve,), coords=np.zeros((0, 2), np.int64),
                  data=_data(2)),
        _coo_case("COO no coordinates, shape inferred from nothing", None, (ve, te),
                  coords=np.zeros((2, 0), np.int64), data=_data(0), shape=(2, float("nan"))),
        _csr_case("CSR indptr too short", "indptr", (ve,), indptr=np.array([0, 2])),
        _csr_case("CSR indptr too long", "indptr", (ve,), indptr=np.array([0, 1, 2, 2])),
        _csr_case("CSR indptr empty (0 rows)", "indptr", (ve,), indptr=np.zeros(0, np.int64),
                  indices=np.zeros(0, np.int64), shape=(0, 3)),
        _csr_case("CSR indptr decreasing", "indptr", (ve,), indptr=np.array([0, 2, 1, 2]), shape=(3, 2)),
        _csr_case("CSR indptr not starting at 0", "indptr", (ve,), indptr=np.array([1, 1, 2])),
        _csr_case("CSR indptr not ending at nnz", "indptr", (ve,), indptr=np.array([0, 1, 1])),
        _csr_case("CSR indptr huge", "indptr", (ve,), indptr=np.array([0, 2**40, 2])),
        _csr_case("CSR indptr negative", "indptr", (ve,), indptr=np.array([0, -3, 2])),
        _csr_case("CSR indptr float", "indptr", (te,), indptr=np.array([0.0, 1.0, 2.0])),
        _csr_case("CSR indptr 2-d", "indptr", (ve,), indptr=np.array([[0, 1, 2]])),
        _csr_case("CSR indices float", "indices", (te,), indices=np.array([1.0, 0.0])),
        _csr_case("CSR indices 2-d", "indices", (ve,), indices=np.array([[1, 0]]), data=_data(1)),
        _csr_case("CSR index past the columns", "indices", (ve,), indices=np.array([1, 2])),
        _csr_case("CSR negative index", "indices", (ve,), indices=np.array([1, -1])),
        _csr_case("CSR index 2**62", "indices", (ve,), indices=np.array([1, 2**62])),
        _csr_case("CSR data length differs", None, (ve,), data=_data(3)),
        _csr_case("CSR shape inferred from a negative index", "indices", (ve,), shape=None,
                  indices=np.array([1, -1])),
        _csr_case("CSR shape inferred from an empty indptr", "indptr", (ve,), shape=None,
                  indptr=np.zeros(0, np.int64), indices=np.zeros(0, np.int64)),
        _csr_case("CSR shape 1-d", "shape", (ve,), shape=(2,)),
        _csr_case("CSR shape with NaN", "shape", (te,), shape=(2, float("nan"))),
        _csr_case("CSR data object", "data", (te,), data=np.array([1, None], dtype=object)),
        _csr_case("CSC indptr decreasing", "indptr", (ve,), fmt="csc", indptr=np.array([0, 2, 1, 2]),
                  shape=(2, 3)),
        _csr_case("CSC index past the rows", "indices", (ve,), fmt="csc", indices=np.array([0, 5])),
        _call_case("fromdense object array", "fromdense", "dense", (te,),
                   args=(np.array([[1, None]], dtype=object),)),
        _call_case("fromdense sparse_dim 3 of 2-d", "fromdense", "sparse_dim", (ve,), args=(np.eye(2),),
                   kwargs={"sparse_dim": 3}),
        _call_case("fromdense sparse_dim -1", "fromdense", "sparse_dim", (ve,), args=(np.eye(2),),
                   kwargs={"sparse_dim": -1}),
        _call_case("fromdense fill 0.5 for integers", "fromdense", "fill_value", (te,),
                   args=(np.eye(2, dtype=np.int64),), kwargs={"fill_value": 0.5}),
        _call_case("fromdense unknown format", "fromdense", "format", (ve,), args=(np.eye(2),),
                   kwargs={"format": "bsr"}),
        _call_case("fromdense csr of 3-d", "fromdense", None, (ve,), args=(np.ones((2, 2, 2)),),
                   kwargs={"format": "csr"}),
        _call_case("asarray ragged list", "asarray", None, (ve, te), args=([[1, 2], [3]],)),
        _call_case("asarray strings", "asarray", None, (te,), args=(np.array(["a", "b"]),)),
        _call_case("asarray unknown format", "asarray", "format", (ve,), args=(np.eye(2),),
                   kwargs={"format": "dia"}),
        _call_case("asarray copy=False of dense input", "asarray", "copy", (ve,), args=(np.eye(2),),
                   kwargs={"copy": False}),
        _call_case("from_scipy of a dense array", "from_scipy", "m", (te,), args=(np.eye(2),)),
        _call_case("from_torch of a list", "from_torch", "t", (te,), args=([1, 2],)),
        _call_case("from_pydata of a dense array", "from_pydata", "s", (te,), args=(np.eye(2),)),
        _call_case("from_scipy CSR index past the columns", "from_scipy", "indices", (ve,), maker="scipy",
                   maker_params={"fmt": "csr", "data": _data(2), "indices": np.array([0, 7]),
                                 "indptr": np.array([0, 1, 2]), "shape": (2, 3)}),
        _call_case("from_scipy CSR indptr decreasing", "from_scipy", "indptr", (ve,), maker="scipy",
                   maker_params={"fmt": "csr", "data": _data(2), "indices": np.array([0, 1]),
                                 "indptr": np.array([0, 2, 1, 2]), "shape": (3, 3)}),
        _call_case("from_scipy CSC negative index", "from_scipy", "indices", (ve,), maker="scipy",
                   maker_params={"fmt": "csc", "data": _data(2), "indices": np.array([0, -4]),
                                 "indptr": np.array([0, 1, 2]), "shape": (3, 2)}),
        _call_case("from_torch COO index past the shape", "from_torch", None, (ve,), maker="torch",
                   maker_params={"layout": "coo", "coords": np.array([[0, 9], [0, 0]]), "data": _data(2),
                                 "shape": (3, 3)}),
        _call_case("from_torch COO negative index", "from_torch", None, (ve,), maker="torch",
                   maker_params={"layout": "coo", "coords": np.array([[0, -2], [0, 0]]), "data": _data(2),
                                 "shape": (3, 3)}),
        _call_case("from_torch CSR indptr decreasing", "from_torch", None, (ve,), maker="torch",
                   maker_params={"layout": "csr", "indptr": np.array([0, 2, 1, 2]), "indices": np.array([0, 1]),
                                 "data": _data(2), "shape": (3, 3)}),
        _call_case("from_torch CSR column past the shape", "from_torch", None, (ve,), maker="torch",
                   maker_params={"layout": "csr", "indptr": np.array([0, 1, 2]), "indices": np.array([0, 9]),
                                 "data": _data(2), "shape": (2, 3)}),
        _call_case("from_torch dense tensor", "from_torch", "t", (te,), maker="torch",
                   maker_params={"layout": "dense", "data": np.eye(2)}),
        _call_case("from_pydata COO coords past the shape", "from_pydata", None, (ve,), maker="pydata",
                   maker_params={"layout": "coo", "valid_coords": np.array([[0, 1], [0, 1]]),
                                 "coords": np.array([[0, 8], [0, 1]]), "data": _data(2), "shape": (2, 2)}),
        _call_case("from_pydata COO negative coords", "from_pydata", None, (ve,), maker="pydata",
                   maker_params={"layout": "coo", "valid_coords": np.array([[0, 1], [0, 1]]),
                                 "coords": np.array([[0, -8], [0, 1]]), "data": _data(2), "shape": (2, 2)}),
        _call_case("from_pydata GCXS indices past the shape", "from_pydata", None, (ve,), maker="pydata",
                   maker_params={"layout": "gcxs", "indptr": np.array([0, 1, 2]), "indices": np.array([0, 6]),
                                 "data": _data(2), "shape": (2, 2)}),
        _call_case("reshape to another size", "reshape", "shape", (ve,), args=((4,),)),
        _call_case("reshape with two -1", "reshape", None, (ve,), args=((-1, -1),)),
        _call_case("reshape with -2", "reshape", None, (ve,), args=((-2, -3),)),
        _call_case("reshape with NaN", "reshape", None, (te,), args=((float("nan"), 2),)),
        _call_case("reshape with a float", "reshape", None, (te,), args=((3.0, 2),)),
        _call_case("broadcast_to a smaller shape", "broadcast_to", "shape", (ve,), args=((3,),)),
        _call_case("broadcast_to an incompatible shape", "broadcast_to", "shape", (ve,), args=((4, 3),)),
        _call_case("broadcast_to a negative shape", "broadcast_to", "shape", (ve,), args=((-2, 3),)),
        _call_case("broadcast_to NaN", "broadcast_to", "shape", (te,), args=((float("nan"), 3),)),
    ]
    # A peer's cases run where the peer is installed (the GPU image has no pydata sparse).
    cases = [c for c in cases if c[2].get("maker") not in _MISSING_PEERS]
    # Under AddressSanitizer jaxlib's C++ exceptions trip ASan's __cxa_throw interceptor (a CHECK failure
    # inside ASan itself, with or without gpusparse): no JAX there.
    if importlib.util.find_spec("jax") is not None and cuda_emulation.mode() != "asan":
        cases += [  # indices past the shape are BCOO's padding, dropped by from_jax: not malformed
            _call_case("from_jax BCOO negative index", "from_jax", None, (ve,), maker="jax",
                       maker_params={"data": np.ones(2, np.float32), "indices": np.array([[0, 0], [-1, 1]]),
                                     "shape": (3, 3)}),
        ]
    if cuda:
        cases += [
            _coo_case("COO coords on the host, data on cuda:0, device='cuda:0' not given", None, (ve,),
                      coords=ok, shape=(2, 2), on_host=("coords",)),
            _csr_case("CSR indptr on the host, the rest on cuda:0", None, (ve,), on_host=("indptr",)),
        ]
    for case in cases:  # reshape and broadcast_to act on a valid 2 x 3 array
        if case[1] == "call" and case[2]["func"] in ("reshape", "broadcast_to"):
            case[2]["dense"] = np.arange(6.0).reshape(2, 3)
    return cases


@st.composite
def checked_coo_cases(draw):
    """COO input with one bad coordinate (negative or past the shape): ``check=True`` must reject it."""
    shape = draw(st.tuples(*[st.integers(1, 5)] * draw(st.integers(1, 3))))
    nnz = draw(st.integers(1, 6))
    coords = np.array([[draw(st.integers(0, n - 1)) for _ in range(nnz)] for n in shape], dtype=np.int64)
    dim, at = draw(st.integers(0, len(shape) - 1)), draw(st.integers(0, nnz - 1))
    coords[dim, at] = draw(st.one_of(st.integers(shape[dim], shape[dim] + 3), st.sampled_from(BIG + NEG)))
    # (no np.abs: it leaves -2**63 negative, and a narrower cast would wrap it into range)
    fits_int16 = -2**15 <= coords.min() and coords.max() < 2**15
    cdtype = draw(st.sampled_from([np.int64, np.int32, np.int16])) if fits_int16 else np.int64
    return _coo_case(f"COO shape={shape} coords={coords.tolist()}", "coords", ("ValueError",),
                     coords=coords.astype(cdtype), shape=shape)


@st.composite
def checked_compressed_cases(draw):
    """CSR/CSC input with a broken ``indptr`` or ``indices``: ``check=True`` must reject it."""
    fmt = draw(st.sampled_from(["csr", "csc"]))
    shape = draw(st.tuples(st.integers(0, 4), st.integers(1, 4)))
    major, minor = (shape[0], shape[1]) if fmt == "csr" else (shape[1], shape[0])
    nnz = draw(st.integers(0, 6)) if major and minor else 0
    indptr = sorted(draw(st.lists(st.integers(0, nnz), min_size=major + 1, max_size=major + 1)))
    indptr[0], indptr[-1] = 0, nnz
    indices = [draw(st.integers(0, minor - 1)) for _ in range(nnz)]
    breaks = [] if not nnz else ["indices"]
    if major:
        breaks.append("indptr")
    if not breaks:
        breaks = ["indptr_length"]
    what = draw(st.sampled_from(breaks))
    if what == "indices":
        indices[draw(st.integers(0, nnz - 1))] = draw(st.one_of(st.integers(minor, minor + 3),
                                                               st.sampled_from(BIG + NEG)))
    elif what == "indptr":
        k = draw(st.integers(0, major))
        indptr[k] = draw(st.one_of(st.sampled_from(BIG + NEG), st.integers(nnz + 1, nnz + 3)))
        if indptr == sorted(indptr) and indptr[0] == 0 and indptr[-1] == nnz:
            indptr[k] = -1
    else:
        indptr = indptr + [nnz]
        what = "indptr"
    idx = np.asarray(indices, np.int64)
    return _csr_case(f"{fmt.upper()} shape={shape} indptr={indptr} indices={indices}", what, ("ValueError",),
                     fmt=fmt, indptr=np.asarray(indptr, np.int64), indices=idx, data=_data(nnz), shape=shape)


# --------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------

def test_harness_names_crashes_and_hangs():
    """A planted segmentation fault and a planted hang are caught, named and isolated; the rest runs."""
    def planted(what):
        return {"build": "planted", "params": {"what": what}, "op": None, "device": "cpu"}

    cases = [planted("nothing"), planted("segfault"), planted("nothing"), planted("hang"), planted("nothing")]
    outcomes = _run_batch(cases, timeout=2)
    assert [o.status for o in outcomes] == ["ok", "signal", "ok", "timeout", "ok"], outcomes
    assert "SIGSEGV" in outcomes[1].message and outcomes[1].isolated
    assert outcomes[3].isolated


@pytest.fixture(scope="module")
def checked_outcomes(device):
    """``(cases, outcomes)`` of every input the constructors must reject, on ``device``."""
    cases = _fixed_checked_cases(cuda=device.is_cuda)
    n = _budget(2, 10, 200)
    cases += draw_many(checked_coo_cases(), n) + draw_many(checked_compressed_cases(), n)
    specs = [{"build": build, "params": params, "op": None, "device": str(device)}
             for _, build, params, _, _ in cases]
    return cases, run_cases(specs)


def test_checked_input_is_rejected(checked_outcomes):
    """Malformed components with ``check=True`` raise TypeError/ValueError/IndexError naming the argument."""
    cases, outcomes = checked_outcomes
    problems = []
    for (label, _, _, blame, expected), outcome in zip(cases, outcomes):
        if outcome.status == "ok":
            problems.append(f"{label}: accepted")
        elif outcome.status != "raised":
            problems.append(f"{label}: {outcome.describe()}")
        elif outcome.type not in expected:
            problems.append(f"{label}: raised {outcome.type} (expected {' or '.join(expected)}): "
                            f"{outcome.message}")
        elif blame and blame not in outcome.message:
            problems.append(f"{label}: the message does not name {blame!r}: {outcome.message}")
    assert not problems, f"{len(problems)} of {len(cases)} malformed inputs:\n  " + "\n  ".join(problems)


@pytest.fixture(scope="module")
def unchecked_outcomes(device):
    """``{op: [(label, outcome), ...]}`` for every malformed array through every operation."""
    arrays = _fixed_malformed_arrays() + draw_many(malformed_arrays(), _budget(1, 8, 400))
    specs, labels = [], []
    for label, build, params in arrays:
        for op in OPERATIONS:
            specs.append({"build": build, "params": params, "op": op, "device": str(device)})
            labels.append((op, label))
    outcomes = run_cases(specs)
    by_op = collections.defaultdict(list)
    for (op, label), outcome in zip(labels, outcomes):
        by_op[op].append((label, outcome))
    return by_op


@pytest.mark.parametrize("op", list(OPERATIONS))
def test_unchecked_input_never_crashes(op, unchecked_outcomes):
    """Every operation on malformed arrays raises ValueError/IndexError/TypeError or returns: no crash, no hang."""
    results = unchecked_outcomes[op]
    problems = [f"{label}: {outcome.describe()}" for label, outcome in results
                if outcome is None or outcome.status in ("signal", "timeout") or not outcome.allowed]
    assert not problems, (f"{op}: {len(problems)} of {len(results)} malformed arrays broke the contract:\n  "
                          + "\n  ".join(problems))
