"""Compiling one kernel instantiation of ``cuda_kernels/`` for the CPU.

A translation unit includes ``cuda_runtime_emulation.h`` (the CUDA
built-ins), the family's unmodified ``.cu`` file, and exports the launcher
of one name expression (``gs_segment_reduce<double, 0>``). It is compiled by
the host C++ compiler (``$CXX``, default ``g++``) into a shared library,
cached on disk under a digest of everything that goes into it: the sources,
the header, the expression, the flags and the compiler's version.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

__all__ = ["HEADER", "CompileError", "build", "cache_dir", "compiler"]

#: The header that supplies the CUDA built-ins.
HEADER = Path(__file__).resolve().parent / "cuda_runtime_emulation.h"

_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-shared", "-fno-strict-aliasing", "-fwrapv")
_ASAN_FLAGS = ("-fsanitize=address", "-fno-omit-frame-pointer", "-fno-common")


class CompileError(RuntimeError):
    """The host compiler rejected a kernel family."""


def compiler() -> str:
    """The host C++ compiler: ``$CXX``, else ``g++``; raises when absent."""
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        raise CompileError(
            f"the CUDA emulation needs a host C++ compiler; {cxx!r} was not found "
            "(install g++ or set CXX)"
        )
    return cxx


@functools.cache
def _compiler_version(cxx: str) -> str:
    result = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False)
    return result.stdout.splitlines()[0] if result.stdout else cxx


def cache_dir() -> Path:
    """Where compiled instantiations are kept (``$GPUSPARSE_EMULATION_CACHE``)."""
    env = os.environ.get("GPUSPARSE_EMULATION_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpusparse" / "cuda-emulation"


def _translation_unit(family: str, expression: str) -> str:
    return (
        f'#include "{HEADER.name}"\n'
        f'#include "{family}.cu"\n'
        f"static const auto gs_emu_kernel = &{expression};\n"
        "GS_EMU_EXPORT(gs_emu_kernel)\n"
    )


def _digest(source_dir: Path, family: str, expression: str, flags: "tuple[str, ...]", cxx: str) -> str:
    digest = hashlib.sha256()
    for part in (family, expression, " ".join(flags), _compiler_version(cxx)):
        digest.update(part.encode())
        digest.update(b"\0")
    digest.update(HEADER.read_bytes())
    for path in sorted(source_dir.iterdir()):
        if path.suffix in (".cu", ".cuh") and path.is_file():
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:24]


def build(source_dir: "str | Path", family: str, expression: str, asan: bool = False) -> Path:
    """The shared library running ``expression`` of ``<source_dir>/<family>.cu``.

    Compiled on first use and cached; a :class:`CompileError` carries the
    compiler's messages.
    """
    source_dir = Path(source_dir)
    cxx = compiler()
    flags = _FLAGS + (_ASAN_FLAGS if asan else ())
    key = _digest(source_dir, family, expression, flags, cxx)
    target = cache_dir() / f"{family}-{key}.so"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gs-emu-") as tmp:
        unit = Path(tmp) / "unit.cpp"
        unit.write_text(_translation_unit(family, expression), encoding="utf-8")
        built = Path(tmp) / "unit.so"
        cmd = [cxx, *flags, f"-I{HEADER.parent}", f"-I{source_dir}", str(unit), "-o", str(built)]
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise CompileError(
                f"compiling {expression} of {source_dir / (family + '.cu')} for the CUDA emulation "
                f"failed:\n{result.stderr.strip()}"
            )
        # Atomic publication: concurrent builders of the same key are harmless.
        staged = target.with_suffix(f".{os.getpid()}.tmp")
        shutil.copyfile(built, staged)
        os.replace(staged, target)
    return target

