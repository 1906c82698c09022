"""report.md of a bench: the report object (`agent.bench.report.compute_report`) as markdown,
section by section: settings, pass@k, fast_p, the headline, counts, cost, the per-problem table,
the problems slower than the bar and what limits them, the notes."""

from __future__ import annotations

from typing import Any

from agent.bench.headline import markdown as headline_markdown
from agent.bench.metrics import BASE_NAMES, REPORTED, SPEEDUP_BASES, one_code_version
from tools.checks.arithmetic import cell

SLOWER_THAN = 0.97
"""Below this speedup over the better baseline, a problem's report line says what limits it."""

DEFINITIONS = (
    "pass@k: unbiased estimator 1 - C(n-c,k)/C(n,k) (Chen et al. 2021), averaged over "
    "problems. fast_p: fraction of problems with a correct candidate whose speedup over "
    "eager is > p (fast_0 = correctness rate); 'per sample' averages over each problem's "
    "candidates (the single-sample expectation). time s: the problem's candidates' draft + "
    "verify + time, summed (waits for a GPU slot included); span s: first start to last "
    "end; host/GPU MB: the largest peak memory its verification and timing jobs reported."
)
"""The report's last paragraph: what its metrics mean."""


def render_markdown(r: dict[str, Any]) -> str:
    lines = [
        *_settings(r),
        *_pass_at_k(r),
        *_fast_p(r),
        *_speedups(r["metrics"]["geomean_speedup"], r["metrics"].get("headline")),
        *_counts(r),
        *_cost(r["metrics"]),
        *_problem_table(r),
        *_slower(r),
        *(f"Note: {n}" for n in r["notes"]),
        "",
        DEFINITIONS,
    ]
    return "\n".join(lines) + "\n"


def _settings(r: dict[str, Any]) -> list[str]:
    """The title, the settings and protocol, and what was evaluated."""
    s = r["settings"]
    who = s["backend"] + (f" ({s['model']})" if s.get("model") else "")
    return [
        f"# triton-agent bench: {s.get('problems_path', '')}",
        "",
        f"Mode **{s['mode']}**, {s['per_problem']} candidate(s) per problem, backend {who}, "
        f"temperature {s['temperature']}, top_p {s['top_p']}; protocol **{s['protocol']}** "
        f"({s['trials']} trials at {s.get('precision', 'fp32')}, tolerance {s['tolerance_preset']}"
        + (f", atol {s['atol']}" if s.get("atol") is not None else "")
        + (f", rtol {s['rtol']}" if s.get("rtol") is not None else "")
        + f", policy {s['policy']}); device {r['device'] or '-'}.",
        "",
        f"Problems: {r['totals']['problems']} ({r['totals']['complete']} complete), candidates "
        f"evaluated: {r['totals']['candidates']}, correct: {r['totals']['correct_candidates']}"
        + (f", wall time {r['elapsed_s']:.0f} s" if r.get("elapsed_s") is not None else "")
        + _code_version(r["totals"].get("code_versions") or {})
        + ".",
        "",
    ]


def _code_version(versions: dict[str, int]) -> str:
    """The words `, code version <digest>` for candidates evaluated by one known version of this
    project's code (`tools.core.code_version`); several are named in the report's notes."""
    one = one_code_version(versions)
    return f", code version {one}" if one else ""


def _pass_at_k(r: dict[str, Any]) -> list[str]:
    """The pass@k table (success@k in loop mode)."""
    pk = r["metrics"]["pass_at_k"]
    label = "success@k (loop)" if r["settings"]["mode"] == "loop" else "pass@k"
    return [
        f"| {label} | " + " | ".join(f"k={k}" for k in pk) + " |",
        "|---|" + "---|" * len(pk),
        "| | " + " | ".join(_pct(v) for v in pk.values()) + " |",
        "",
    ]


def _fast_p(r: dict[str, Any]) -> list[str]:
    """The fast_p table: over eager, per sample and, where timed, over torch.compile and over
    the better of the two."""
    m = r["metrics"]
    lines = [
        "| fast_p | " + " | ".join(f"p={p}" for p in m["fast_p"]) + " |",
        "|---|" + "---|" * len(m["fast_p"]),
        "| any candidate | " + " | ".join(_pct(v) for v in m["fast_p"].values()) + " |",
        "| per sample | " + " | ".join(_pct(v) for v in m["fast_p_per_sample"].values()) + " |",
    ]
    for key, over in (
        ("fast_p_compile", "torch.compile"),
        ("fast_p_best", "the better of the two"),
    ):
        if r["timed"] and m.get(key):
            lines.append(
                f"| any candidate, over {over} | "
                + " | ".join(_pct(v) for v in m[key].values())
                + " |"
            )
    lines.append("")
    return lines


def _speedups(g: dict[str, Any], headline: dict[str, Any] | None) -> list[str]:
    """The headline (the geometric means' sentence in a report made before it) and, where eager
    was also timed with TF32 off, its geometric mean beside the bar."""
    lines = list(headline_markdown(headline) or [_geomeans(g), ""])
    fp32 = g.get("eager_fp32") or {}
    if fp32.get("value"):
        lines += [
            f"Where eager ran its convolutions in TF32 (PyTorch's default for cuDNN), eager was "
            f"also timed with TF32 off, the precision the candidates are held to: geometric mean "
            f"over it {fp32['value']:.2f}x ({fp32['problems']} problems). Evidence beside the bar; "
            "the bar keeps PyTorch's defaults.",
            "",
        ]
    return lines


def _counts(r: dict[str, Any]) -> list[str]:
    """Candidates by status, problems by outcome."""
    m = r["metrics"]
    return [
        "Statuses (candidates): "
        + (", ".join(f"{k} {v}" for k, v in m["statuses"].items()) or "-"),
        "",
        "Problems by outcome: "
        + (", ".join(f"{k} {v}" for k, v in m["outcomes"].items()) or "-")
        + f"; no verdict yet: {r['totals']['no_verdict']}.",
        "",
    ]


def _cost(m: dict[str, Any]) -> list[str]:
    """Time per problem and peak memory per problem."""
    t = m["time_per_problem_s"]
    mem = m["peak_memory_mb"]
    return [
        f"Time per problem (draft + verify + time): median {_num(t['median'], ' s')}, "
        f"p90 {_num(t['p90'], ' s')}, total {_num(t['total'], ' s')} ({t['problems']} problems). "
        "Peak memory per problem: "
        + "; ".join(
            f"{label} median {_num(mem[w]['median'], ' MB')}, max {_num(mem[w]['max'], ' MB')} "
            f"({mem[w]['problems']} problems)"
            for w, label in (("host", "host"), ("gpu", "GPU"))
        )
        + ".",
        "",
    ]


def _problem_table(r: dict[str, Any]) -> list[str]:
    """One line per problem: counts, pass@1, best speedups, precision, cost, statuses (and the
    error's first line), arithmetic."""
    s = r["settings"]
    one = "success@1" if s["mode"] == "loop" else "pass@1"
    lines = [
        f"| problem | n | correct | {one} | best vs eager | best vs compile | best vs better "
        "| vs eager fp32 | vs eager cudnn.benchmark | precision | time s | span s | host MB "
        "| GPU MB | statuses | arithmetic |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for p in r["problems"]:
        st = ", ".join(f"{k}×{v}" for k, v in p["statuses"].items())
        if p["error"]:
            st = (
                (st + "; " if st else "")
                + "error: "
                + p["error"].splitlines()[0][:100].replace("|", "\\|")
            )
        b = p["best_speedup"]
        lines.append(
            f"| {p['problem']} | {p['n']} | {p['correct']} | {_pct(p['pass_at_k'].get('1'))} | "
            f"{' | '.join(_x(b.get(k)) for k in REPORTED)} | "
            f"{p.get('precision') or '-'} | {_num(p['time_s'])} | "
            f"{_num(p['span_s'])} | {_num(p['peak_host_mb'], nd=0)} | "
            f"{_num(p['peak_gpu_mb'], nd=0)} | {st or '-'} | {cell(p.get('arithmetic'), s.get('precision'))} |"
        )
    lines.append("")
    return lines


def _slower(r: dict[str, Any]) -> list[str]:
    """The problems slower than the better baseline (below SLOWER_THAN), what was tried and what
    limits each one; nothing where none is."""
    s = r["settings"]
    slow = [
        p
        for p in r["problems"]
        if p["best_speedup"].get("best") is not None and p["best_speedup"]["best"] < SLOWER_THAN
    ]
    if not slow:
        return []
    tried = (
        f"the agent's loop with a budget of {s['per_problem']} (drafts, feedback, the tuner)"
        if s["mode"] == "loop"
        else f"{s['per_problem']} candidate(s) per problem from the {s['backend']} backend, "
        "not tuned (the loop mode tunes)"
    )
    lines = [
        f"## Slower than the better of eager and torch.compile (below {SLOWER_THAN}x)",
        "",
        f"Tried: {tried}. Limit: how close the fastest correct candidate and each baseline "
        "get to the roof that bounds the problem (measured device peaks).",
        "",
        "| problem | best vs better | what limits it |",
        "|---|---|---|",
    ]
    for p in slow:
        why = (p.get("limit") or "no roofline (see the candidate's profile.json)").replace(
            "|", "\\|"
        )
        lines.append(f"| {p['problem']} | {_x(p['best_speedup']['best'])} | {why} |")
    lines.append("")
    return lines


def _geomeans(g: dict[str, Any]) -> str:
    """The geometric means' sentence of a report made before the headline (`metrics.headline`)."""
    return "Geometric-mean speedup of the best correct kernel per problem: " + "; ".join(
        f"over {BASE_NAMES[b]}: "
        + (f"{g[b]['value']:.2f}x ({g[b]['problems']} problems)" if g[b]["value"] else "n/a")
        for b in SPEEDUP_BASES
        if b in g
    )


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _num(v: float | None, unit: str = "", nd: int = 1) -> str:
    return "-" if v is None else f"{v:.{nd}f}{unit}"
