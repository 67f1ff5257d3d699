"""An array's state dictionary is built once, before any thread can see the array.

CPython 3.11 keeps a new object's attributes in an inline values array and
builds the object's ``__dict__`` from it on the first ``__dict__`` read.
Pinning (``gpusparse/containers/_inplace.py``) reads ``__dict__`` from every
reading thread; a garbage collection inside the first build can run another
thread (or a finaliser), which builds a second dictionary over the same
values array, and freeing either dictionary frees the other's values: a
use after free that crashed a thread fuzzer run, rarely. The child below
forces that interleaving deterministically -- a finaliser that reads
``x.__dict__`` runs from the collection that the first build's allocation
starts -- and checks that both reads get the one dictionary the array holds,
for arrays made every way the library makes them. In a child process: a
failure here may corrupt memory.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_CHILD = textwrap.dedent('''
    import copy, gc, pickle, sys
    import numpy as np
    import gpusparse as gs

    def made():
        dense = np.array([[0.0, 1.0], [2.0, 0.0]])
        coo = gs.COO([[0, 1], [1, 0]], [1.0, 2.0], shape=(2, 2), device="cpu")
        yield "COO()", coo
        yield "CSR()", gs.CSR([0, 1, 2], [1, 0], [1.0, 2.0], shape=(2, 2), device="cpu")
        yield "fromdense", gs.fromdense(dense, format="csc")
        yield "an operation's result", coo + coo
        yield "tocsr", coo.tocsr()
        yield "copy.copy", copy.copy(coo)
        yield "pickle", pickle.loads(pickle.dumps(coo))

    holder = []

    class ReadsDuringCollection:
        def __del__(self):
            holder.append(target.__dict__)

    failures = []
    for how, target in made():
        holder.clear()
        cycle = ReadsDuringCollection()
        cycle.self = cycle
        del cycle
        spare = [{} for _ in range(200)]  # no free dictionaries: reading __dict__ below allocates one
        gc.set_threshold(1)
        first = target.__dict__
        gc.set_threshold(700)
        gc.collect()
        if not holder or holder[0] is not first or target.__dict__ is not first:
            failures.append(how)
    print("FAILURES", failures)
''')


def test_state_dictionary_exists_before_any_read():
    out = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FAILURES []" in out.stdout, out.stdout + out.stderr


_COLLECTED_INSIDE_A_REGISTRY = textwrap.dedent('''
    import gc, sys
    import numpy as np
    import gpusparse as gs
    from gpusparse.containers._inplace import write_lock
    from gpusparse.containers.compressed import trust_structure

    def register(x):  # the registry under test: a record that a weakref callback drops
        if sys.argv[1] == "write_lock":
            write_lock(x)
        else:
            trust_structure(x.indptr, x.indices, x.shape)

    def make():
        return gs.CSR(np.array([0, 1, 1]), np.array([1]), np.array([1.0]), shape=(2, 2), device="cpu")

    def dying_array():  # a registered array kept alive only by a reference cycle
        x = make()
        register(x)
        x.__dict__["cycle"] = x

    inside = []  # where each collection started: True inside the registry's function

    def where(phase, info):
        if phase == "start":
            inside.append(sys._getframe(1).f_code.co_name in ("write_lock", "trust_structure"))

    survivors = [make() for _ in range(8)]
    for k, survivor in enumerate(survivors):  # a collection k allocations into the registration
        gc.collect()
        gc.disable()
        for _ in range(5):
            dying_array()
        gc.callbacks.append(where)
        gc.set_threshold(gc.get_count()[0] + k)
        gc.enable()
        register(survivor)
        gc.set_threshold(700)
        gc.callbacks.remove(where)
    print("DONE", any(inside))
''')


@pytest.mark.parametrize("registry", ["write_lock", "trust_structure"])
def test_arrays_collected_inside_a_registry_leave_it(registry):
    """The guards of the registries keyed by array are re-entrant.

    ``write_lock`` (the writers' lock table) and ``trust_structure`` (the
    trusted CSR structures) keep records that a weak reference's callback
    drops, under the registry's guard. With a plain lock, a collection
    started by an allocation inside the guard ran the callback of a
    collected array on the same thread, which waited forever for the guard
    its own thread held: an in-place operation hung.
    """
    out = subprocess.run([sys.executable, "-c", _COLLECTED_INSIDE_A_REGISTRY, registry], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "DONE True" in out.stdout, out.stdout + out.stderr
