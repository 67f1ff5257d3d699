"""The memory rule: an operation that cannot fit raises MemoryError naming it, before allocating.

Each refusal runs in a child process whose address space is capped
(``RLIMIT_AS``) at what it uses after building the operands plus
:data:`HEADROOM`: without the check, the operation would allocate until
NumPy raises its own ``MemoryError`` under the cap (and on a machine
without the cap the kernel's OOM killer ends the process). The child
prints the exception's type and message; the test asserts a MemoryError
whose message names the operation and says that nothing was allocated
(so not NumPy's "Unable to allocate"). The same children also run
ordinary-sized versions of each operation under the cap and compare them
with a dense NumPy oracle, so the rule cannot refuse what fits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpusparse as gs
from gpusparse import _memory
from gpusparse._device import CPU

#: Address space the child may add after building its operands.
HEADROOM = 1 << 30

CHILD = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    import gpusparse as gs

    device, case = sys.argv[1], sys.argv[2]
    if device == "cpu":
        xp = np
    else:
        from gpusparse._device import cuda_module
        xp = cuda_module()
    # A GPU holds tens of GiB: there every operand is 5x longer (its results 25x larger), so that
    # what is refused cannot fit on any card, whatever the test processes beside it hold.
    n, s = (40000, 1) if device == "cpu" else (200000, 5)
    x = gs.random((500 * s, 400), density=0.2, format="csr", device=device, seed=0)  # 40,000 entries
    col = gs.COO([np.arange(n), np.zeros(n, np.int64)], np.ones(n), shape=(n, 1), device=device)
    row = gs.COO([np.zeros(n, np.int64), np.arange(n)], np.ones(n), shape=(1, n), device=device)
    tall = gs.COO([np.arange(n) * 800, np.zeros(n, np.int64)], np.ones(n), shape=(n * 839, 1), device=device)
    big = {
        "kron": lambda: gs.kron(x, x),
        "outer": lambda: gs.outer(x, x),
        "matmul": lambda: col.tocsr() @ row.tocsr(),
        "matmul-esc": lambda: tall @ row,
        "tensordot": lambda: gs.tensordot(col, row, axes=1),
        "add": lambda: col + row,
        "multiply-dense": lambda: gs.multiply(col, xp.ones((1, n))),
        "add-dense": lambda: col + xp.arange(float(n)).reshape(1, -1),
        "todense": lambda: gs.COO([[0], [0]], [1.0], shape=(n * 5 // 2, n * 5 // 2), device=device).todense(),
        "inv": lambda: gs.linalg.inv(gs.eye(n, device=device)),
    }
    # ordinary sizes of the same operations, each against NumPy
    s = gs.random((30, 20), density=0.2, device=device, seed=1)
    S = s.todense() if device == "cpu" else s.todense().get()
    small = [
        (lambda: gs.kron(s, s), lambda: np.kron(S, S)),
        (lambda: gs.outer(s, s), lambda: np.outer(S, S)),
        (lambda: s @ s.T, lambda: S @ S.T),
        (lambda: s.tocsr() @ s.T.tocsr(), lambda: S @ S.T),
        (lambda: s[:1] + s[:, :1], lambda: S[:1] + S[:, :1]),
        (lambda: s, lambda: S),
        (lambda: gs.linalg.inv(gs.eye(30, device=device) * 2 + s @ s.T * 0.01),
         lambda: np.linalg.inv(np.eye(30) * 2 + S @ S.T * 0.01)),
    ]
    host = (lambda a: a) if device == "cpu" else (lambda a: a.get())
    for fn, _ in small:  # compile and warm everything before the cap
        fn()
    statm = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (statm + int(sys.argv[3]), resource.RLIM_INFINITY))
    ok = True
    for fn, oracle in small:
        got = fn()
        got = host(got.todense() if hasattr(got, "todense") else got)
        ok &= bool(np.allclose(got, oracle()))
    try:
        big[case]()
        outcome = {"type": None, "message": ""}
    except MemoryError as exc:
        outcome = {"type": type(exc).__name__, "message": str(exc)}
    outcome["small_ok"] = ok
    print(json.dumps(outcome))
""")

CASES = {  # case -> the operation the message must name
    "kron": "kron",
    "outer": "outer",
    "matmul": "matmul",
    "matmul-esc": "matmul",
    "tensordot": "tensordot",
    "add": "add",
    "add-dense": "add",
    "multiply-dense": "multiply",
    "todense": "to_dense",
    "inv": "inv",
}


def _child(device, case):
    env = dict(os.environ)
    env.setdefault("GPUSPARSE_AUTO_DENSIFY", "1")
    proc = subprocess.run([sys.executable, "-c", CHILD, str(device), case, str(HEADROOM)],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, f"the child died (rc {proc.returncode}):\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", sorted(CASES))
def test_refuses_what_cannot_fit_before_allocating(device, case):
    out = _child(device, case)
    assert out["small_ok"], "an ordinary-sized operation gave a wrong result under the cap"
    assert out["type"] == "MemoryError", f"{case}: no MemoryError ({out})"
    message = out["message"]
    assert message.startswith(CASES[case] + ":"), message
    assert "nothing was allocated" in message, message
    assert "GiB" in message


def test_available_is_bounded_by_rlimit_as_and_cgroup(monkeypatch):
    free, why = _memory.available(CPU)
    assert 0 < free <= _memory.PHYSICAL_MEMORY
    monkeypatch.setattr(_memory, "_address_space_available", lambda: 123 << 20)
    assert _memory.available(CPU) == (123 << 20, "what RLIMIT_AS leaves")
    monkeypatch.setattr(_memory, "_cgroup_available", lambda: 77 << 20)
    assert _memory.available(CPU) == (77 << 20, "what the memory cgroup limit leaves")


def test_cgroup_limit_counts_reclaimable_cache_as_free(tmp_path, monkeypatch):
    (tmp_path / "memory.max").write_text(f"{1 << 30}\n")
    (tmp_path / "memory.current").write_text(f"{900 << 20}\n")
    (tmp_path / "memory.stat").write_text(f"anon 1\ninactive_file {300 << 20}\nactive_file 5\n")
    files = (str(tmp_path / "memory.max"), str(tmp_path / "memory.current"), str(tmp_path / "memory.stat"),
             "inactive_file")
    monkeypatch.setattr(_memory, "_cgroup_dirs", lambda: [files])
    assert _memory._cgroup_available() == (1 << 30) - (600 << 20)
    (tmp_path / "memory.max").write_text("max\n")
    assert _memory._cgroup_available() is None


def test_require_names_the_operation_and_small_requests_measure_nothing(monkeypatch):
    calls = []

    def fake(device):
        calls.append(device)
        return 100 << 20, "a test limit"

    monkeypatch.setattr(_memory, "available", fake)
    _memory.require(_memory.CHECK_MIN_BYTES - 1, CPU, "a buffer", "demo")
    assert calls == []
    _memory.require(90 << 20, CPU, "a buffer", "demo")
    with pytest.raises(MemoryError, match=r"^demo: the result needs 200\.0 MiB, more than the 100\.0 MiB"):
        _memory.require(200 << 20, CPU, "the result", "demo")
    with _memory.operation("outer op"), _memory.operation("inner op"):
        with pytest.raises(MemoryError, match="^outer op: the result"):
            _memory.require(200 << 20, CPU, "the result")


def test_todense_refusal_matches_the_dense_size(monkeypatch):
    x = gs.COO([[0], [0]], [1.0], shape=(4096, 4096), device="cpu")  # 128 MiB dense
    monkeypatch.setattr(_memory, "available", lambda device: (100 << 20, "a test limit"))
    with pytest.raises(MemoryError, match=r"^to_dense: the dense array of shape \(4096, 4096\) and dtype "
                                          r"float64 needs 128\.0 MiB"):
        x.todense()
    monkeypatch.setattr(_memory, "available", lambda device: (200 << 20, "a test limit"))
    dense = x.todense()
    expected = np.zeros((4096, 4096))
    expected[0, 0] = 1.0
    np.testing.assert_array_equal(dense, expected)


def test_allocator_memory_error_is_renamed_once():
    with pytest.raises(MemoryError, match=r"^kron: the allocator refused memory \(MemoryError: boom\)"):
        with _memory.operation("kron"):
            raise MemoryError("boom")


def test_sparsifying_dense_dimensions_is_charged_per_entry():
    # A hybrid COO (one sparse dimension, a 600 x 600 dense block per entry) meets a fully sparse
    # operand: its dense block becomes 720,000 stored entries of one value each (about 50 MB). The
    # estimate once charged the whole block to every new entry (about 500 GB) and refused it.
    rng = np.random.default_rng(0)
    d = rng.random((2, 600, 600)) < 0.5
    x = gs.COO(np.array([[0, 1]]), d, shape=d.shape, device="cpu")
    y = gs.fromdense(d, device="cpu")
    result = np.logical_and(x, y)
    np.testing.assert_array_equal(result.todense(), d)
