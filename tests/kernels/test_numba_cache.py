"""The CPU kernels' on-disk cache: keyed by the kernel package's sources, with a portable prebuilt cache.

Numba checks a cached kernel against its own file only; a kernel that
inlined a helper from another module would otherwise keep the old helper's
code after that module changed. A prebuilt cache compiled for the generic
CPU is loaded by any process whose own cache lacks a kernel. Each child
process here calls one kernel with its own or a shared cache directory and
reports how many compilations Numba started.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gpusparse._kernels import _cache, _numba

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
from gpusparse._kernels import _cache
if {other!r}:  # as if a kernel source had changed
    _cache.source_digest.cache_clear()
    _cache._digest_of = lambda directory: {other!r}
import numpy as np
from gpusparse._kernels.cpu._common import row_range
assert row_range(np.array([0, 2, 3]), 1, 3) == (2, 3)
print(json.dumps({{"compiles": count[0], "digest": _cache.source_digest()}}))
"""

#: The environment of a process of ``python -m gpusparse warmup --portable``.
_BUILDING = {_cache.BUILDING_ENV: "1", "NUMBA_CPU_NAME": "generic", "NUMBA_CPU_FEATURES": ""}


def _child(cache_dir, other="", prebuilt=None, **env):
    """Run one kernel in a fresh process: ``{"compiles": n, "digest": ...}``.

    ``prebuilt`` is the prebuilt cache directory (default: a missing one,
    so that a prebuilt cache in the source tree is not seen).
    """
    settings = ("GPUSPARSE_NUMBA_CACHE", "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", _cache.BUILDING_ENV)
    env = {**{k: v for k, v in os.environ.items() if k not in settings}, **env, "NUMBA_CACHE_DIR": str(cache_dir),
           _cache.PREBUILT_ENV: str(prebuilt or os.path.join(str(cache_dir), "no-prebuilt-cache"))}
    out = subprocess.run([sys.executable, "-c", _CHILD.format(repo=REPO, other=other)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_digest_follows_names_and_contents(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    (tmp_path / "notes.txt").write_text("not a source")
    first = _cache._digest_of(tmp_path)
    assert _cache._digest_of(tmp_path) == first
    (tmp_path / "notes.txt").write_text("changed, but not a source")
    (tmp_path / "_prebuilt").mkdir()
    (tmp_path / "_prebuilt" / "cached.py").write_text("the prebuilt cache is not a source")
    assert _cache._digest_of(tmp_path) == first
    (tmp_path / "sub" / "b.py").write_text("y = 3\n")
    changed = _cache._digest_of(tmp_path)
    assert changed != first
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "c.py")
    assert _cache._digest_of(tmp_path) not in (first, changed)


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


_CACHING = pytest.mark.skipif(os.environ.get("GPUSPARSE_NUMBA_CACHE", "1") == "0", reason="kernel caching switched off")


@_CACHING
def test_a_prebuilt_cache_is_loaded_by_a_process_with_an_empty_cache(tmp_path):
    prebuilt = tmp_path / "prebuilt"
    built = _child(tmp_path / "builder-cache", prebuilt=prebuilt, **_BUILDING)
    assert built["compiles"] >= 1
    assert list(prebuilt.rglob("*.nbi")), "the build wrote no index"
    assert not list((tmp_path / "builder-cache").rglob("*.nbi")), "the build wrote into its own cache"
    # another process, another (empty) cache, this machine's own CPU: loads the generic kernels
    assert _child(tmp_path / "user-cache", prebuilt=prebuilt)["compiles"] == 0
    assert not list((tmp_path / "user-cache").rglob("*.nbc")), "a loaded kernel was written again"
    # a process whose kernel sources differ passes the prebuilt cache over and compiles
    assert _child(tmp_path / "user-cache", prebuilt=prebuilt, other="0123456789abcdef")["compiles"] >= 1


@_CACHING
def test_an_unreadable_prebuilt_cache_is_passed_over(tmp_path):
    prebuilt = tmp_path / "prebuilt"
    _child(tmp_path / "builder-cache", prebuilt=prebuilt, **_BUILDING)
    for path in prebuilt.rglob("*.nbc"):  # the index reads, the data does not
        path.write_bytes(b"\x80\x04not a pickle at all")
    assert _child(tmp_path / "user-cache", prebuilt=prebuilt)["compiles"] >= 1
    for path in prebuilt.rglob("*.nbi"):  # nor does the index
        path.write_bytes(b"\x80\x04not a pickle either")
    assert _child(tmp_path / "other-cache", prebuilt=prebuilt)["compiles"] >= 1
    assert _child(tmp_path / "user-cache", prebuilt=prebuilt)["compiles"] == 0  # the compiled kernel was cached


@_CACHING
def test_generic_entries_of_the_own_cache_are_loaded(tmp_path):
    cache = tmp_path / "numba-cache"
    assert _child(cache, NUMBA_CPU_NAME="generic", NUMBA_CPU_FEATURES="")["compiles"] >= 1
    assert _child(cache)["compiles"] == 0


def test_warmup_portable_refuses_what_it_cannot_build(tmp_path, monkeypatch):
    from gpusparse._warmup import warmup
    with pytest.raises(TypeError, match="portable must be True, False or a directory, got 3"):
        warmup(dtypes=["float64"], progress=False, portable=3)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(PermissionError, match="portable: cannot create the prebuilt cache directory"):
        warmup(dtypes=["float64"], progress=False, portable=str(blocker / "cache"))
    monkeypatch.setenv("GPUSPARSE_NUMBA_CACHE", "0")
    with pytest.raises(ValueError, match="caching is off"):
        warmup(dtypes=["float64"], progress=False, portable=str(tmp_path / "cache"))


def test_the_command_line_names_the_portable_option(tmp_path, capsys):
    from gpusparse.__main__ import main
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SystemExit) as exit_info:
        main(["warmup", "--quiet", "--dtypes", "float64", "--portable", str(blocker / "cache")])
    assert exit_info.value.code == 2
    assert "portable: cannot create the prebuilt cache directory" in capsys.readouterr().err


@pytest.mark.parametrize("fastmath", [True, {"nnan"}, {"fast"}])
def test_jit_refuses_fastmath_that_breaks_nan_semantics(fastmath):
    with pytest.raises(ValueError, match="fastmath must be a set of single flags"):
        _numba.jit(fastmath=fastmath)


_OUTSIDE = """
import sys
sys.path.insert(0, {repo!r})
sys.path.insert(0, {where!r})
import user_kernels
assert user_kernels.twice(21) == 42
print(type(user_kernels.twice._cache).__name__)
"""


@_CACHING
def test_a_kernel_outside_the_package_is_never_prebuilt(tmp_path):
    # a user's own kernel decorated with gpusparse's jit, in a process building the prebuilt cache:
    # it runs, is cached as usual, and nothing is written beside or above the prebuilt directory
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "user_kernels.py").write_text(
        "from gpusparse._kernels._numba import jit\n\n@jit()\ndef twice(x):\n    return 2 * x\n")
    prebuilt = tmp_path / "cache" / "prebuilt"
    env = {**{k: v for k, v in os.environ.items() if k not in ("GPUSPARSE_NUMBA_CACHE",)}, **_BUILDING,
           "NUMBA_CACHE_DIR": str(tmp_path / "numba"), _cache.PREBUILT_ENV: str(prebuilt)}
    out = subprocess.run([sys.executable, "-c", _OUTSIDE.format(repo=REPO, where=str(tmp_path / "src"))], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["KernelCache"]
    assert not [p for p in (tmp_path / "cache").rglob("*") if p.is_file()], "wrote into the prebuilt tree"
    assert list((tmp_path / "numba").rglob("user_kernels.twice-*.nbi")), "not cached in its own cache"
