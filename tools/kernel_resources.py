#!/usr/bin/env python3
"""Per-kernel resources from ptxas, theoretical occupancy, and the budget check.

``tools/check_cuda_kernels.sh`` compiles every ``cuda_kernels/*.cu`` to PTX
(every template instantiated) and assembles each PTX file with ``ptxas -v``
for each architecture, leaving ``<family>.sm_<arch>.ptx`` and
``<family>.sm_<arch>.ptxas.log`` in one directory. This script reads them:

* from the ptxas log, per kernel instantiation (entry function): registers
  per thread, static shared memory, spill stores / loads and stack frame
  (bytes);
* from the PTX, the launch bounds (``.maxntid`` / ``.reqntid``): the block
  size the occupancy is computed at (every launcher uses its kernel's
  ``__launch_bounds__`` block size);

and computes the theoretical occupancy of each as the CUDA occupancy
calculator does (``cuda_occupancy.h``), for compute capability 8.0 / 9.0:
blocks per SM limited by registers (allocated per warp in units of 256, per
SM sub-partition), by shared memory (static + 1 KiB reserved per block, in
units of 128 bytes, out of 164 KiB per SM on sm_80 and 228 KiB on sm_90), by
2048 threads (64 warps) and by 32 blocks per SM; occupancy = active warps /
64. Dynamic shared memory is not seen by ptxas: no kernel uses any today, and
a budget entry can state it (``dynamic_smem``).

It prints one row per (instantiation, architecture), names demangled
(``cu++filt`` or ``c++filt`` when installed), and checks the budgets file
(``tools/kernel_budgets.json``): for every instantiation a budget entry
matches, spills above the entry's ``max_spill_bytes`` (0 unless stated) and
occupancy below its ``min_occupancy`` (per architecture where given) fail the
check. Every budget entry must match at least one instantiation, so that a
renamed kernel cannot drop out of the check unnoticed.

    python3 tools/kernel_resources.py DIR [--budgets FILE] [--hot-only] [--json OUT]

Exit status: 0 when every budget holds, 1 when one does not (each failure
named with its kernel, architecture and figure), 2 on unreadable input.
Only the standard library is used.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "ARCH_LIMITS",
    "ArchLimits",
    "Budget",
    "KernelResources",
    "Occupancy",
    "check_budgets",
    "demangle",
    "load_budgets",
    "occupancy",
    "parse_ptx_launch_bounds",
    "parse_ptxas_log",
]


# ----------------------------------------------------------------------------
# Per-architecture limits (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability", and cuda_occupancy.h).


@dataclass(frozen=True)
class ArchLimits:
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    reg_alloc_unit: int = 256  # registers, allocated per warp
    sub_partitions: int = 4
    max_regs_per_thread: int = 255
    smem_per_sm: int = 167936  # bytes usable by blocks (largest carveout)
    smem_reserved_per_block: int = 1024
    smem_alloc_unit: int = 128
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    warp_size: int = 32

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


ARCH_LIMITS = {
    "sm_80": ArchLimits(smem_per_sm=164 * 1024),
    "sm_90": ArchLimits(smem_per_sm=228 * 1024),
}


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    block: int  # threads per block
    blocks_by_regs: int
    blocks_by_smem: int
    blocks_by_threads: int
    blocks_by_limit: int
    blocks: int  # active blocks per SM: the least of the four
    warps: int  # active warps per SM
    fraction: float  # warps / max warps per SM
    limiter: str  # what binds: "threads" (a full SM), else "regs", "smem", "blocks" ("+" when tied)


def occupancy(regs: int, smem: int, block: int, limits: ArchLimits, dynamic_smem: int = 0) -> Occupancy:
    """Theoretical occupancy of a kernel using ``regs`` registers per thread
    and ``smem`` + ``dynamic_smem`` bytes of shared memory per block, launched
    with ``block`` threads per block (cuda_occupancy.h's computation, with
    partitioned global caching off and the largest shared-memory carveout)."""
    if block <= 0:
        raise ValueError(f"block size must be positive, got {block}")
    warps_per_block = -(-block // limits.warp_size)

    if regs > 0:
        regs_per_warp = _round_up(regs * limits.warp_size, limits.reg_alloc_unit)
        # The hardware check assumes the block's warps are spread over every
        # sub-partition at once.
        assumed = regs_per_warp * _round_up(warps_per_block, limits.sub_partitions)
        if regs > limits.max_regs_per_thread or max(assumed, regs_per_warp * warps_per_block) > limits.regs_per_block:
            by_regs = 0
        else:
            warps_per_partition = (limits.regs_per_sm // limits.sub_partitions) // regs_per_warp
            by_regs = warps_per_partition * limits.sub_partitions // warps_per_block
    else:
        by_regs = 1 << 30  # no registers: no register limit

    # The 1 KiB reserved per block counts even for a block without shared memory.
    alloc = _round_up(smem + dynamic_smem + limits.smem_reserved_per_block, limits.smem_alloc_unit)
    by_smem = limits.smem_per_sm // alloc

    by_threads = limits.max_warps_per_sm // warps_per_block
    by_limit = limits.max_blocks_per_sm
    blocks = min(by_regs, by_smem, by_threads, by_limit)
    if blocks == by_threads:  # as many warps as an SM holds: nothing else binds
        limiter = "threads"
    else:
        limiter = "+".join(n for n, v in (("regs", by_regs), ("smem", by_smem), ("blocks", by_limit))
                           if v == blocks)
    warps = blocks * warps_per_block
    return Occupancy(block, by_regs, by_smem, by_threads, by_limit, blocks, warps,
                     warps / limits.max_warps_per_sm, limiter)


# ----------------------------------------------------------------------------
# Parsing


@dataclass
class KernelResources:
    mangled: str
    arch: str  # "sm_80"
    family: str = ""  # the .cu file's stem
    name: str = ""  # demangled, without the parameter list
    regs: int = 0
    barriers: int = 0
    smem: int = 0  # static shared memory, bytes
    stack: int = 0  # stack frame, bytes
    spill_stores: int = 0
    spill_loads: int = 0
    block: "int | None" = None  # threads per block from the launch bounds
    min_blocks: "int | None" = None  # .minnctapersm, when given
    occ: "Occupancy | None" = field(default=None, repr=False)

    @property
    def spills(self) -> int:
        return self.spill_stores + self.spill_loads


_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_RE_USED = re.compile(r"Used (\d+) registers")
_RE_BARRIERS = re.compile(r"used (\d+) barriers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas_log(text: str) -> "list[KernelResources]":
    """The entry functions of one ``ptxas -v`` log, in order.

    Understands the lines ptxas prints per entry function::

        ptxas info    : Compiling entry function '_Z...' for 'sm_90'
        ptxas info    : Function properties for _Z...
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 128 registers, used 1 barriers, 48256 bytes smem, 448 bytes cmem[0]

    "Function properties" of a non-entry (called) function are not rows.
    Other lines (compile times, gmem, warnings) are ignored.
    """
    kernels: "list[KernelResources]" = []
    by_name: "dict[tuple[str, str], KernelResources]" = {}
    current: "KernelResources | None" = None
    props_for: "str | None" = None
    for line in text.splitlines():
        m = _RE_ENTRY.search(line)
        if m:
            current = KernelResources(mangled=m.group(1), arch=m.group(2))
            kernels.append(current)
            by_name[(current.mangled, current.arch)] = current
            props_for = None
            continue
        m = _RE_PROPS.search(line)
        if m:
            props_for = m.group(1)
            continue
        m = _RE_FRAME.search(line)
        if m:
            if current is not None and props_for == current.mangled:
                current.stack, current.spill_stores, current.spill_loads = (int(g) for g in m.groups())
            props_for = None
            continue
        m = _RE_USED.search(line)
        if m and current is not None:
            current.regs = int(m.group(1))
            b = _RE_BARRIERS.search(line)
            current.barriers = int(b.group(1)) if b else 0
            s = _RE_SMEM.search(line)
            current.smem = int(s.group(1)) if s else 0
    return kernels


_RE_PTX_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)")
_RE_PTX_NTID = re.compile(r"^\s*\.(maxntid|reqntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")
_RE_PTX_MINCTA = re.compile(r"^\s*\.minnctapersm\s+(\d+)")


def parse_ptx_launch_bounds(text: str) -> "dict[str, tuple[int | None, int | None]]":
    """``{mangled entry: (threads per block, min blocks per SM)}`` from the
    ``.maxntid`` / ``.reqntid`` and ``.minnctapersm`` directives of a PTX
    file (None where absent)."""
    out: "dict[str, tuple[int | None, int | None]]" = {}
    current: "str | None" = None
    for line in text.splitlines():
        m = _RE_PTX_ENTRY.match(line)
        if m:
            current = m.group(1)
            out[current] = (None, None)
            continue
        if current is None:
            continue
        if line.startswith("{"):  # the body: no more directives of this entry
            current = None
            continue
        m = _RE_PTX_NTID.match(line)
        if m:
            dims = [int(g) for g in m.groups()[1:] if g is not None]
            out[current] = (math.prod(dims), out[current][1])
            continue
        m = _RE_PTX_MINCTA.match(line)
        if m:
            out[current] = (out[current][0], int(m.group(1)))
    return out


# ----------------------------------------------------------------------------
# Demangling


def _demangler() -> "list[str] | None":
    for tool in ("cu++filt", "c++filt"):
        path = shutil.which(tool)
        if path:
            return [path, "-p"]  # -p: without the parameter list
    return None


def _tidy(name: str) -> str:
    name = re.sub(r"^void\s+", "", name.strip())
    return name.replace("(int)", "")  # non-type int template arguments: 0, not (int)0


def demangle(mangled: "list[str]") -> "dict[str, str]":
    """Demangled names, in one call of cu++filt / c++filt; a name stays
    mangled where no demangler is installed or it fails."""
    names = sorted(set(mangled))
    out = {n: n for n in names}
    cmd = _demangler()
    if not cmd or not names:
        return out
    try:
        res = subprocess.run(cmd, input="\n".join(names) + "\n", capture_output=True, text=True,
                             timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return out
    lines = res.stdout.splitlines()
    if len(lines) == len(names):
        out.update({n: _tidy(d) for n, d in zip(names, lines)})
    return out


# ----------------------------------------------------------------------------
# Budgets


@dataclass
class Budget:
    match: str  # fnmatch pattern on the demangled name, e.g. "gs_radix_scatter<*>"
    reason: str
    min_occupancy: "dict[str, float]"  # per arch ("sm_80"), "*" for every arch; {} = no floor
    max_spill_bytes: "dict[str, int]"  # spill stores + loads, per arch or "*"
    goal_occupancy: "float | None" = None
    goal_spill_bytes: "int | None" = None
    goal: str = ""
    dynamic_smem: int = 0

    def floor(self, arch: str) -> "float | None":
        return self.min_occupancy.get(arch, self.min_occupancy.get("*"))

    def spill_cap(self, arch: str) -> int:
        return self.max_spill_bytes.get(arch, self.max_spill_bytes.get("*", 0))

    @property
    def is_ratchet(self) -> bool:
        """A floor set at today's figure, short of the goal stated beside it."""
        return self.goal_occupancy is not None or self.goal_spill_bytes is not None


def _per_arch(value, where: str, what: str, kind) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        value = {"*": value}
    out = {}
    for arch, v in value.items():
        if arch != "*" and arch not in ARCH_LIMITS:
            raise ValueError(f"{where}: {what}[{arch!r}]: unknown architecture (known: {', '.join(ARCH_LIMITS)})")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or (kind is float and v > 1):
            raise ValueError(f"{where}: {what}[{arch!r}] = {v!r} is not a valid "
                             f"{'fraction in [0, 1]' if kind is float else 'byte count'}")
        if kind is int and v != int(v):
            raise ValueError(f"{where}: {what}[{arch!r}] = {v!r} is not a whole number of bytes")
        out[arch] = kind(v)
    return out


def load_budgets(data: dict) -> "list[Budget]":
    """Budget entries from the parsed budgets JSON (``{"kernels": [...]}``)."""
    entries = data.get("kernels") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ValueError("budgets: 'kernels' must be a list")
    out = []
    for i, e in enumerate(entries):
        where = f"budgets: kernels[{i}]"
        if not isinstance(e, dict) or not isinstance(e.get("match"), str):
            raise ValueError(f"{where}: needs a 'match' pattern")
        where = f"budgets: {e['match']}"
        if not str(e.get("reason", "")).strip():
            raise ValueError(f"{where}: every target needs its 'reason'")
        goal_occ, goal_spill = e.get("goal_occupancy"), e.get("goal_spill_bytes")
        if (goal_occ is not None or goal_spill is not None) and not str(e.get("goal", "")).strip():
            raise ValueError(f"{where}: a goal needs its 'goal' text (what stands in the way)")
        if goal_occ is not None and not (isinstance(goal_occ, (int, float)) and 0 <= goal_occ <= 1):
            raise ValueError(f"{where}: goal_occupancy {goal_occ!r} is not a fraction in [0, 1]")
        out.append(Budget(
            match=e["match"], reason=e["reason"],
            min_occupancy=_per_arch(e.get("min_occupancy"), where, "min_occupancy", float),
            max_spill_bytes=_per_arch(e.get("max_spill_bytes", 0), where, "max_spill_bytes", int),
            goal_occupancy=goal_occ, goal_spill_bytes=goal_spill, goal=e.get("goal", ""),
            dynamic_smem=int(e.get("dynamic_smem", 0)),
        ))
    return out


def budget_for(name: str, budgets: "list[Budget]") -> "Budget | None":
    """The first budget entry whose pattern matches ``name`` (list the
    specific patterns first)."""
    for b in budgets:
        if fnmatch.fnmatchcase(name, b.match):
            return b
    return None


def check_budgets(kernels: "list[KernelResources]", budgets: "list[Budget]") -> "tuple[list[str], list[str]]":
    """``(failures, notes)``: one failure line per broken budget (spills,
    occupancy, missing launch bounds, a budget matching nothing); one note
    per ratchet entry, on how far it stands from its goal and whether its
    floor can be raised."""
    failures, notes = [], []
    matched: "dict[str, list[KernelResources]]" = {b.match: [] for b in budgets}
    for k in kernels:
        b = budget_for(k.name, budgets)
        if b is None:
            continue
        matched[b.match].append(k)
        tag = f"{k.name} [{k.arch}, {k.family}.cu]"
        cap = b.spill_cap(k.arch)
        if k.spills > cap:
            failures.append(f"{tag}: spills {k.spill_stores} B stored + {k.spill_loads} B loaded "
                            f"= {k.spills} B, budget {cap} B ({b.reason})")
        floor = b.floor(k.arch)
        if floor is None:
            continue
        if k.occ is None:
            failures.append(f"{tag}: no launch bounds (.maxntid) in the PTX: occupancy cannot be computed")
        elif k.occ.fraction + 1e-9 < floor:
            failures.append(f"{tag}: occupancy {k.occ.fraction:.1%} ({k.occ.blocks} blocks/SM, limited by "
                            f"{k.occ.limiter}: {k.regs} registers, {k.smem} B static smem) below its target "
                            f"{floor:.1%} ({b.reason})")
    for b in budgets:
        ks = matched[b.match]
        if not ks:
            failures.append(f"budget {b.match!r} matches no kernel instantiation (renamed or removed?)")
            continue
        if not b.is_ratchet:
            continue
        for arch in sorted({k.arch for k in ks}):
            ka = [k for k in ks if k.arch == arch]
            occs = [k.occ.fraction for k in ka if k.occ is not None]
            worst_occ = min(occs) if occs else None
            worst_spill = max(k.spills for k in ka)
            floor = b.floor(arch)
            parts = []
            if b.goal_occupancy is not None and worst_occ is not None:
                parts.append(f"occupancy {worst_occ:.1%} (floor {floor:.1%}, goal {b.goal_occupancy:.0%})"
                             if floor is not None else f"occupancy {worst_occ:.1%} (goal {b.goal_occupancy:.0%})")
            if b.goal_spill_bytes is not None:
                n_spill = sum(1 for k in ka if k.spills > b.goal_spill_bytes)
                parts.append(f"spills up to {worst_spill} B in {n_spill} of {len(ka)} instantiations "
                             f"(cap {b.spill_cap(arch)} B, goal {b.goal_spill_bytes} B)")
            tighter = []
            if (b.goal_occupancy is not None and floor is not None and worst_occ is not None
                    and worst_occ > floor + 1e-9):
                tighter.append(f"min_occupancy[{arch}] to {worst_occ:.4g}")
            if b.goal_spill_bytes is not None and worst_spill < b.spill_cap(arch):
                tighter.append(f"max_spill_bytes[{arch}] to {worst_spill}")
            if tighter:
                parts.append("better than the budget, tighten " + ", ".join(tighter))
            notes.append(f"{b.match} [{arch}]: " + "; ".join(parts))
    return failures, notes


# ----------------------------------------------------------------------------
# Collecting and printing


def collect(directory: Path) -> "list[KernelResources]":
    """Every kernel instantiation of the ``*.ptxas.log`` files in
    ``directory``, with its launch bounds from the ``.ptx`` beside it."""
    logs = sorted(directory.glob("*.ptxas.log"))
    if not logs:
        raise FileNotFoundError(f"no *.ptxas.log under {directory}")
    kernels = []
    for log in logs:
        stem = log.name[: -len(".ptxas.log")]  # "<family>.sm_<arch>"
        family = stem.rsplit(".", 1)[0]
        ptx = log.with_name(stem + ".ptx")
        bounds = parse_ptx_launch_bounds(ptx.read_text()) if ptx.exists() else {}
        for k in parse_ptxas_log(log.read_text()):
            k.family = family
            k.block, k.min_blocks = bounds.get(k.mangled, (None, None))
            kernels.append(k)
    names = demangle([k.mangled for k in kernels])
    for k in kernels:
        k.name = names[k.mangled]
    return kernels


def attach_occupancy(kernels: "list[KernelResources]", budgets: "list[Budget]") -> None:
    for k in kernels:
        limits = ARCH_LIMITS.get(k.arch)
        if limits is None or k.block is None:
            continue
        b = budget_for(k.name, budgets)
        k.occ = occupancy(k.regs, k.smem, k.block, limits, b.dynamic_smem if b else 0)


def format_table(kernels: "list[KernelResources]", budgets: "list[Budget]") -> str:
    head = ("kernel", "arch", "regs", "smem B", "spill st/ld B", "stack B", "block", "blk/SM", "occ",
            "limit", "target")
    rows = []
    for k in sorted(kernels, key=lambda k: (k.family, k.name, k.arch)):
        b = budget_for(k.name, budgets)
        floor = b.floor(k.arch) if b else None
        if b is None:
            target = "-"
        else:
            cap = b.spill_cap(k.arch)
            target = ", ".join(([f">={floor:.1%}"] if floor is not None else [])
                               + ["no spills" if cap == 0 else f"spills<={cap}B"])
        occ = k.occ
        rows.append((k.name, k.arch, str(k.regs), str(k.smem), f"{k.spill_stores}/{k.spill_loads}",
                     str(k.stack), str(k.block or "?"), str(occ.blocks) if occ else "?",
                     f"{occ.fraction:.1%}" if occ else "?", occ.limiter if occ else "?", target))
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    left = {0, 1, 9, 10}

    def fmt(r):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()

    return "\n".join([fmt(head), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in rows])


def main(argv: "list[str] | None" = None) -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", type=Path, help="where the <family>.sm_<arch>.ptx / .ptxas.log files are")
    ap.add_argument("--budgets", type=Path, default=here / "kernel_budgets.json")
    ap.add_argument("--hot-only", action="store_true", help="print only the kernels the budgets name")
    ap.add_argument("--json", type=Path, help="also write every row as JSON here")
    args = ap.parse_args(argv)

    try:
        budgets = load_budgets(json.loads(args.budgets.read_text()))
        kernels = collect(args.directory)
    except (OSError, ValueError) as exc:
        print(f"kernel_resources: {exc}", file=sys.stderr)
        return 2
    attach_occupancy(kernels, budgets)

    shown = [k for k in kernels if not args.hot_only or budget_for(k.name, budgets)]
    print(format_table(shown, budgets))
    if args.json:
        args.json.write_text(json.dumps([{**{f: v for f, v in asdict(k).items() if f != "occ"},
                                          "occupancy": asdict(k.occ) if k.occ else None}
                                         for k in kernels], indent=1))

    failures, notes = check_budgets(kernels, budgets)
    spilling = sorted({f"{k.name} [{k.arch}]: {k.spill_stores}/{k.spill_loads} B"
                       for k in kernels if k.spills and not budget_for(k.name, budgets)})
    n_hot = sum(1 for k in kernels if budget_for(k.name, budgets))
    print(f"\nkernel_resources: {len(kernels)} kernel instantiations ({n_hot} under a budget), "
          f"{len({k.arch for k in kernels})} architectures")
    for s in spilling:
        print(f"note: spills (no budget): {s}")
    for n in notes:
        print(f"note: {n}")
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        print(f"kernel_resources: {len(failures)} budget(s) broken ({args.budgets.name})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
