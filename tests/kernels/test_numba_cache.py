"""The CPU kernels' on-disk cache is keyed by the sources of the whole kernel package.

Numba checks a cached kernel against its own file only; a kernel that
inlined a helper from another module would otherwise keep the old helper's
code after that module changed. Each child process here calls one kernel
with a shared, initially empty ``NUMBA_CACHE_DIR`` and reports how many
compilations Numba started.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpusparse._kernels import _numba

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = """
import json, sys
sys.path.insert(0, {repo!r})
from numba.core import event
count = [0]
class Count(event.Listener):
    def on_start(self, ev): count[0] += 1
    def on_end(self, ev): pass
event.register("numba:compile", Count())
from gpusparse._kernels import _numba
if {other!r}:  # as if a kernel source had changed
    _numba.source_digest.cache_clear()
    _numba._digest_of = lambda directory: {other!r}
import numpy as np
from gpusparse._kernels.cpu._common import row_range
assert row_range(np.array([0, 2, 3]), 1, 3) == (2, 3)
print(json.dumps({{"compiles": count[0], "digest": _numba.source_digest()}}))
"""


def _child(cache_dir, other=""):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    env.pop("GPUSPARSE_NUMBA_CACHE", None)
    out = subprocess.run([sys.executable, "-c", _CHILD.format(repo=REPO, other=other)], env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_digest_follows_names_and_contents(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "notes.txt").write_text("not a source")
    first = _numba._digest_of(tmp_path)
    assert _numba._digest_of(tmp_path) == first
    (tmp_path / "notes.txt").write_text("changed, but not a source")
    assert _numba._digest_of(tmp_path) == first
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    changed = _numba._digest_of(tmp_path)
    assert changed != first
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "c.py")
    assert _numba._digest_of(tmp_path) not in (first, changed)


def test_kernel_cache_keys_carry_the_digest():
    from numba.core import types

    from gpusparse._kernels.cpu._common import row_range
    key = row_range._cache._index_key((types.int64[:], types.int64, types.int64), row_range.targetctx.codegen())
    assert key[-1] == _numba.source_digest()


@pytest.mark.skipif(os.environ.get("GPUSPARSE_NUMBA_CACHE", "1") == "0", reason="kernel caching switched off")
def test_a_changed_kernel_package_compiles_afresh(tmp_path):
    cache = tmp_path / "numba-cache"
    first = _child(cache)
    assert first["compiles"] >= 1
    assert _child(cache)["compiles"] == 0  # loaded from the cache
    changed = _child(cache, other="0123456789abcdef")
    assert changed["digest"] == "0123456789abcdef"
    assert changed["compiles"] >= 1  # the old entries do not match the new sources
    assert _child(cache)["compiles"] == 0  # and the first sources' entries are still there
