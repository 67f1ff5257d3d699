"""tools/kernel_resources.py: the ptxas / PTX parsers, the occupancy
computation and the budget check, on canned compiler output (the real nvcc
and ptxas run is ``make kernels-check``)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

_TOOLS = Path(__file__).resolve().parents[2] / "tools"


def _load():
    spec = importlib.util.spec_from_file_location("kernel_resources", _TOOLS / "kernel_resources.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


kr = _load()

SCATTER = "_Z16gs_radix_scatterIxxEvPKT_PKT0_PS0_PS3_S6_S7_xxiPKiPKxx"
UPSWEEP = "_Z16gs_radix_upsweepIxEvPKT_S2_S2_xxiiPKiPxxPy"
REDUCE = "_Z17gs_segment_reduceIdLi0EEvPKT_xxPKxxS4_xiiPN13gs_seg_policyIS0_XT0_EE5out_tEPxPNS6_5acc_tEPi"

# As ptxas -v prints it for sm_90 (no cmem on the "Used" line, a
# "cumulative stack size" where the frame is not empty, a called function).
LOG_SM90 = f"""\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '{SCATTER}' for 'sm_90'
ptxas info    : Function properties for {SCATTER}
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 48256 bytes smem
ptxas info    : Compile time = 339.699 ms
ptxas info    : Function properties for _Z9gs_helperv
    16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function '{REDUCE}' for 'sm_90'
ptxas info    : Function properties for {REDUCE}
    24 bytes stack frame, 32 bytes spill stores, 48 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 24 bytes cumulative stack size, 20520 bytes smem
ptxas info    : Compile time = 120.5 ms
"""

# As ptxas -v prints it for sm_80 (cmem on the "Used" line, no smem for a
# kernel without shared memory).
LOG_SM80 = f"""\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '{SCATTER}' for 'sm_80'
ptxas info    : Function properties for {SCATTER}
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 48256 bytes smem, 448 bytes cmem[0]
ptxas info    : Compiling entry function '_Z13gs_radix_planPKyxiPi' for 'sm_80'
ptxas info    : Function properties for _Z13gs_radix_planPKyxiPi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 16 registers, 416 bytes cmem[0]
"""

PTX = f"""\
.version 9.0
.target sm_90
.address_size 64

.visible .entry {SCATTER}(
\t.param .u64 {SCATTER}_param_0
)
.maxntid 256, 1, 1
{{
\tret;
}}
.visible .entry {REDUCE}(
\t.param .u64 {REDUCE}_param_0
)
.maxntid 256, 1, 1
.minnctapersm 6
{{
\tret;
}}
.visible .entry _Z6no_lbv(
)
{{
\tret;
}}
.entry _Z6req_3dv(
)
.reqntid 16, 8, 2
{{
\tret;
}}
"""


# ----------------------------------------------------------------------------
# Parsing


def test_parse_ptxas_log_sm90():
    ks = kr.parse_ptxas_log(LOG_SM90)
    assert [k.mangled for k in ks] == [SCATTER, REDUCE]  # the called function is no row
    s, r = ks
    assert (s.arch, s.regs, s.smem, s.barriers, s.stack, s.spill_stores, s.spill_loads) == (
        "sm_90", 128, 48256, 1, 0, 0, 0)
    assert (r.regs, r.smem, r.stack, r.spill_stores, r.spill_loads, r.spills) == (40, 20520, 24, 32, 48, 80)


def test_parse_ptxas_log_sm80_cmem_and_no_smem():
    s, plan = kr.parse_ptxas_log(LOG_SM80)
    assert (s.arch, s.regs, s.smem) == ("sm_80", 80, 48256)
    assert (plan.regs, plan.smem, plan.barriers) == (16, 0, 0)


def test_parse_ptxas_log_ignores_other_lines():
    assert kr.parse_ptxas_log("ptxas info    : 0 bytes gmem\nptxas warning : something\n") == []


def test_parse_ptx_launch_bounds():
    b = kr.parse_ptx_launch_bounds(PTX)
    assert b[SCATTER] == (256, None)
    assert b[REDUCE] == (256, 6)
    assert b["_Z6no_lbv"] == (None, None)
    assert b["_Z6req_3dv"] == (16 * 8 * 2, None)


# ----------------------------------------------------------------------------
# Occupancy (cuda_occupancy.h's figures for compute capability 8.0 / 9.0)

SM80, SM90 = kr.ARCH_LIMITS["sm_80"], kr.ARCH_LIMITS["sm_90"]


def test_limits():
    assert SM80.smem_per_sm == 164 * 1024 and SM90.smem_per_sm == 228 * 1024
    assert SM80.max_warps_per_sm == 64 and SM80.max_blocks_per_sm == 32


def test_occupancy_radix_scatter_sm90():
    # 128 registers x 32 = 4096 per warp: 4 warps per sub-partition, 16 per
    # SM = 2 blocks of 8 warps; shared memory would allow 4.
    o = kr.occupancy(128, 48256, 256, SM90)
    assert (o.blocks_by_regs, o.blocks_by_smem, o.blocks, o.warps) == (2, 4, 2, 16)
    assert o.fraction == 0.25 and o.limiter == "regs"


def test_occupancy_radix_scatter_sm80():
    # 80 registers: 2560 per warp, 6 warps per sub-partition, 24 per SM = 3
    # blocks; shared memory: 48256 + 1024 reserved = 49280 B, 167936 // 49280 = 3.
    o = kr.occupancy(80, 48256, 256, SM80)
    assert (o.blocks_by_regs, o.blocks_by_smem, o.blocks) == (3, 3, 3)
    assert o.fraction == 0.375 and o.limiter == "regs+smem"


@pytest.mark.parametrize(("regs", "blocks"), [
    (16, 8), (32, 8), (33, 6), (40, 6), (41, 5), (48, 5), (49, 4), (64, 4), (65, 3), (80, 3), (81, 2),
    (128, 2), (129, 1), (255, 1),
])
def test_occupancy_register_granularity(regs, blocks):
    # Registers per warp round up to 256: 33 registers cost as much as 40.
    o = kr.occupancy(regs, 0, 256, SM80)
    assert o.blocks == blocks
    assert o.fraction == blocks * 8 / 64


def test_occupancy_over_the_register_file():
    assert kr.occupancy(256, 0, 256, SM80).blocks == 0
    assert kr.occupancy(255, 0, 1024, SM80).blocks == 0  # 255 x 1024 > 65536 per block


def test_occupancy_shared_memory_limit_and_granularity():
    # 40000 + 1024 = 41024 -> 41088 (128-byte units): 4 blocks on sm_80, 5 on sm_90.
    assert kr.occupancy(32, 40000, 256, SM80).blocks_by_smem == 4
    assert kr.occupancy(32, 40000, 256, SM90).blocks_by_smem == 5
    o = kr.occupancy(32, 60000, 256, SM80)
    assert (o.blocks, o.limiter) == (2, "smem")
    # dynamic shared memory (stated in a budget) counts as well
    assert kr.occupancy(32, 20000, 256, SM80, dynamic_smem=20000).blocks == 4


def test_occupancy_threads_and_block_limits():
    full = kr.occupancy(20, 0, 1024, SM90)
    assert (full.blocks, full.fraction, full.limiter) == (2, 1.0, "threads")
    small = kr.occupancy(20, 0, 32, SM90)  # 32 blocks of one warp: half the SM
    assert (small.blocks, small.fraction, small.limiter) == (32, 0.5, "blocks")
    odd = kr.occupancy(20, 0, 96, SM90)  # 3 warps per block: 21 blocks = 63 warps
    assert (odd.blocks, odd.warps) == (21, 63)
    with pytest.raises(ValueError):
        kr.occupancy(20, 0, 0, SM90)


# ----------------------------------------------------------------------------
# Demangling


@pytest.mark.skipif(not (shutil.which("cu++filt") or shutil.which("c++filt")), reason="no c++filt")
def test_demangle():
    names = kr.demangle([SCATTER, REDUCE, "_Z13gs_radix_planPKyxiPi", "not_mangled"])
    assert names[SCATTER] == "gs_radix_scatter<long long, long long>"
    assert names[REDUCE] == "gs_segment_reduce<double, 0>"
    assert names["_Z13gs_radix_planPKyxiPi"] == "gs_radix_plan"
    assert names["not_mangled"] == "not_mangled"


def test_demangle_without_a_demangler(monkeypatch):
    monkeypatch.setattr(kr, "_demangler", lambda: None)
    assert kr.demangle([SCATTER]) == {SCATTER: SCATTER}


# ----------------------------------------------------------------------------
# Budgets


def _k(name, arch="sm_90", regs=32, smem=0, st=0, ld=0, block=256):
    k = kr.KernelResources(mangled=name, arch=arch, family="fam", name=name, regs=regs, smem=smem,
                           spill_stores=st, spill_loads=ld, block=block)
    k.occ = kr.occupancy(regs, smem, block, kr.ARCH_LIMITS[arch]) if block else None
    return k


def _budgets(*entries):
    return kr.load_budgets({"kernels": list(entries)})


def test_load_budgets_forms():
    (b,) = _budgets({"match": "k<*>", "reason": "r", "min_occupancy": {"sm_80": 0.375, "sm_90": 0.25},
                     "max_spill_bytes": {"sm_90": 32}, "goal_occupancy": 0.5, "goal": "g"})
    assert b.floor("sm_80") == 0.375 and b.floor("sm_90") == 0.25
    assert b.spill_cap("sm_80") == 0 and b.spill_cap("sm_90") == 32
    assert b.is_ratchet
    (c,) = _budgets({"match": "k", "reason": "r", "min_occupancy": 0.5})
    assert c.floor("sm_80") == c.floor("sm_90") == 0.5 and not c.is_ratchet


@pytest.mark.parametrize(("entry", "message"), [
    ({"reason": "r"}, "match"),
    ({"match": "k"}, "reason"),
    ({"match": "k", "reason": " "}, "reason"),
    ({"match": "k", "reason": "r", "min_occupancy": 50}, "fraction"),
    ({"match": "k", "reason": "r", "min_occupancy": {"sm_70": 0.5}}, "unknown architecture"),
    ({"match": "k", "reason": "r", "max_spill_bytes": -1}, "byte count"),
    ({"match": "k", "reason": "r", "max_spill_bytes": 1.5}, "whole number"),
    ({"match": "k", "reason": "r", "goal_occupancy": 0.5}, "goal"),
    ({"match": "k", "reason": "r", "goal_occupancy": 2, "goal": "g"}, "fraction"),
])
def test_load_budgets_rejects(entry, message):
    with pytest.raises(ValueError, match=message):
        _budgets(entry)
    with pytest.raises(ValueError, match="list"):
        kr.load_budgets({"kernels": {}})


def test_first_matching_entry_applies():
    budgets = _budgets({"match": "f<double, *>", "reason": "wide", "min_occupancy": 0.5},
                       {"match": "f<*>", "reason": "narrow", "min_occupancy": 0.75})
    assert kr.budget_for("f<double, 1>", budgets).reason == "wide"
    assert kr.budget_for("f<float, 1>", budgets).reason == "narrow"
    assert kr.budget_for("g<float>", budgets) is None


def test_check_passes():
    failures, notes = kr.check_budgets([_k("a<int>", regs=32)],
                                       _budgets({"match": "a<*>", "reason": "r", "min_occupancy": 0.5}))
    assert failures == [] and notes == []


def test_check_fails_on_spills_naming_kernel_and_figure():
    failures, _ = kr.check_budgets([_k("a<int>", st=8, ld=16)],
                                   _budgets({"match": "a<*>", "reason": "hot", "min_occupancy": 0.5}))
    (f,) = failures
    assert "a<int> [sm_90, fam.cu]" in f and "8 B stored + 16 B loaded = 24 B" in f and "budget 0 B" in f


def test_check_spill_cap_per_arch():
    budgets = _budgets({"match": "a<*>", "reason": "r", "max_spill_bytes": {"sm_80": 0, "sm_90": 32},
                        "goal_spill_bytes": 0, "goal": "g"})
    ok, _ = kr.check_budgets([_k("a<int>", "sm_90", st=12, ld=20)], budgets)
    bad, _ = kr.check_budgets([_k("a<int>", "sm_80", st=4, ld=4)], budgets)
    assert ok == [] and len(bad) == 1 and "sm_80" in bad[0]


def test_check_fails_below_occupancy_target():
    # The known starting point: radix scatter at 128 registers on sm_90.
    k = _k("gs_radix_scatter<long long, long long>", regs=128, smem=48256)
    failures, _ = kr.check_budgets([k], _budgets({"match": "gs_radix_scatter<*>", "reason": "latency",
                                                  "min_occupancy": 0.5}))
    (f,) = failures
    assert "gs_radix_scatter<long long, long long> [sm_90" in f
    assert "occupancy 25.0%" in f and "2 blocks/SM" in f and "128 registers" in f and "48256 B" in f
    assert "target 50.0%" in f and "latency" in f


def test_check_ratchet_holds_today_and_reports_goal():
    budgets = _budgets({"match": "gs_radix_scatter<*>", "reason": "r", "goal": "needs <= 64 registers",
                        "min_occupancy": {"sm_80": 0.375, "sm_90": 0.25}, "goal_occupancy": 0.5})
    today = [_k("gs_radix_scatter<long long, long long>", "sm_80", regs=80, smem=48256),
             _k("gs_radix_scatter<long long, long long>", "sm_90", regs=128, smem=48256)]
    failures, notes = kr.check_budgets(today, budgets)
    assert failures == []
    assert any("[sm_90]" in n and "25.0%" in n and "goal 50%" in n for n in notes)
    assert not any("tighten" in n for n in notes)
    # worse than the ratchet: fails
    worse = [_k("gs_radix_scatter<long long, long long>", "sm_80", regs=88, smem=48256)]
    failures, _ = kr.check_budgets(worse, budgets)
    assert len(failures) == 1 and "occupancy 25.0%" in failures[0] and "37.5%" in failures[0]
    # better: passes, and says which figure to tighten
    better = [_k("gs_radix_scatter<long long, long long>", "sm_90", regs=80, smem=48256),
              _k("gs_radix_scatter<long long, long long>", "sm_80", regs=80, smem=48256)]
    failures, notes = kr.check_budgets(better, budgets)
    assert failures == []
    assert any("tighten min_occupancy[sm_90] to 0.375" in n for n in notes)


def test_check_missing_launch_bounds_fails_when_a_floor_is_set():
    failures, _ = kr.check_budgets([_k("a<int>", block=None)],
                                   _budgets({"match": "a<*>", "reason": "r", "min_occupancy": 0.5}))
    assert len(failures) == 1 and "launch bounds" in failures[0]
    failures, _ = kr.check_budgets([_k("a<int>", block=None)], _budgets({"match": "a<*>", "reason": "r"}))
    assert failures == []  # spills only


def test_check_budget_matching_nothing_fails():
    failures, _ = kr.check_budgets([_k("a<int>")], _budgets({"match": "renamed<*>", "reason": "r"}))
    assert failures == ["budget 'renamed<*>' matches no kernel instantiation (renamed or removed?)"]


def test_repository_budgets_file():
    data = json.loads((_TOOLS / "kernel_budgets.json").read_text())
    budgets = kr.load_budgets(data)
    assert budgets and all(b.reason.strip() for b in budgets)
    names = {b.match for b in budgets}
    assert {"gs_radix_scatter<*>", "gs_csr_spmm<*>", "gs_segment_reduce<*>"} <= names
    # more specific patterns come before the catch-alls they would shadow
    order = [b.match for b in budgets]
    assert order.index("gs_segment_reduce<*, [67]>") < order.index("gs_segment_reduce<*>")
    assert {"gs_csr_spmm_reduce_chunks<*>", "gs_csr_spmm_reduce_rows<*>", "gs_csr_chunk_counts<*>"} <= names


# ----------------------------------------------------------------------------
# The command line, on a directory laid out as check_cuda_kernels.sh leaves it


def _tree(tmp_path, log=LOG_SM90, arch="sm_90"):
    (tmp_path / f"sort.{arch}.ptxas.log").write_text(log)
    (tmp_path / f"sort.{arch}.ptx").write_text(PTX)
    return tmp_path


def _budget_file(tmp_path, *entries):
    p = tmp_path / "budgets.json"
    p.write_text(json.dumps({"kernels": list(entries)}))
    return p


def test_main_fails_and_names_kernel(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    d = _tree(tmp_path / "out")
    budgets = _budget_file(tmp_path, {"match": "*", "reason": "hot", "min_occupancy": 0.5})
    rc = kr.main([str(d), "--budgets", str(budgets), "--json", str(tmp_path / "rows.json")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "FAIL: " in out and "occupancy 25.0%" in out and "spills 32 B stored + 48 B loaded" in out
    rows = json.loads((tmp_path / "rows.json").read_text())
    assert {r["mangled"] for r in rows} == {SCATTER, REDUCE}
    assert all(r["occupancy"]["block"] == 256 for r in rows)


def test_main_passes_and_prints_table(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    d = _tree(tmp_path / "out")
    budgets = _budget_file(tmp_path, {"match": "*", "reason": "r", "min_occupancy": 0.25,
                                      "max_spill_bytes": 80})
    assert kr.main([str(d), "--budgets", str(budgets)]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:4] == ["kernel", "arch", "regs", "smem"]
    assert "2 kernel instantiations (2 under a budget)" in out


def test_main_unreadable_input(tmp_path, capsys):
    budgets = _budget_file(tmp_path, {"match": "*", "reason": "r"})
    assert kr.main([str(tmp_path), "--budgets", str(budgets)]) == 2
    assert "no *.ptxas.log" in capsys.readouterr().err
