"""Final files of a run: best_kernel.py, report.json (the result object), report.md, a plot."""

from __future__ import annotations

from typing import Any

from agent.context import RunContext

RESULT_SCHEMA_VERSION = 1


def result_object(ctx: RunContext, state: dict[str, Any]) -> dict[str, Any]:
    """The run's result: what `--json` prints and report.json holds (schema in docs/json.md)."""
    best = state.get("best")
    attempts = state.get("attempts") or []
    timed = ctx.device == "cuda"
    faster = None
    if best is not None and timed and best.get("speedup") is not None:
        faster = best["speedup"] >= ctx.config.target_speedup
    success = best is not None and (faster is not False)
    kernel_path = str(ctx.rundir.path / "best_kernel.py") if best is not None else None
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "command": ctx.mode,
        "status": "ok" if success else "failed",
        "correct": best is not None,
        "faster": faster,
        "timed": timed,
        "run_id": ctx.rundir.run_id,
        "run_dir": str(ctx.rundir.path),
        "problem": state.get("problem_path"),
        "device": ctx.device,
        "precision": ctx.config.precision,
        "best_kernel": kernel_path,
        "best": None
        if best is None
        else {
            k: best.get(k) for k in ("index", "source", "status", "speedup", "speedups", "summary")
        },
        "baselines": state.get("baselines"),
        "target_speedup": ctx.config.target_speedup,
        "baseline": ctx.config.baseline,
        "budget": {"given": ctx.config.budget, "left": state.get("budget_left")},
        "attempts": [
            {
                k: a.get(k)
                for k in (
                    "index",
                    "round",
                    "source",
                    "status",
                    "correct",
                    "speedup",
                    "speedups",
                    "summary",
                )
            }
            for a in attempts
        ],
        "stop_reason": state.get("stop_reason"),
        "notes": state.get("notes") or [],
    }


def write_best_kernel(ctx: RunContext, best: dict[str, Any] | None) -> None:
    """best_kernel.py: written as soon as a new best is found, so a killed run keeps it."""
    if best is not None and best.get("code"):
        header = (
            f"# triton-agent run {ctx.rundir.run_id}: attempt {best['index']} ({best['source']}), "
            f"{best['summary']}\n"
        )
        ctx.rundir.write_text("best_kernel.py", header + best["code"])


def write_final_files(ctx: RunContext, state: dict[str, Any]) -> dict[str, Any]:
    result = result_object(ctx, state)
    write_best_kernel(ctx, state.get("best"))
    ctx.rundir.write_json("report.json", result)
    ctx.rundir.write_text("report.md", render_markdown(result))
    _plot(ctx, state)
    from agent.html_report import write_run_html

    write_run_html(ctx.rundir.path)  # report.html: one self-contained file
    return result


def render_markdown(r: dict[str, Any]) -> str:
    lines = [f"# triton-agent {r['command']}: {r['problem']}", ""]
    verdict = "a correct kernel was found" if r["correct"] else "no correct kernel was found"
    if r["correct"] and r["timed"]:
        verdict += " and it is faster" if r["faster"] else " but it is not faster than the target"
    elif r["correct"]:
        verdict += " (CPU only: not timed)"
    at = f" (at {r['precision']})" if r.get("precision", "fp32") != "fp32" else ""
    lines += [f"**Result:** {verdict}{at}. Stopped because: {r['stop_reason']}.", ""]
    if r["best"]:
        lines += [
            f"**Best:** attempt {r['best']['index']} ({r['best']['source']}): {r['best']['summary']}",
            f"File: `{r['best_kernel']}`",
            "",
        ]
    b = r.get("baselines") or {}
    if b.get("available") is False:
        lines += [f"Baselines: not timed ({b.get('reason')}).", ""]
    elif b:
        lines += [
            "Baselines: " + ", ".join(f"{k}: {v}" for k, v in b.items() if k != "available"),
            "",
        ]
    # the speedup over each baseline and over the better (faster) of the two; the bar is `baseline`
    lines += [
        "| # | round | source | status | vs eager | vs compile | vs better | summary |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a in r["attempts"]:
        sp = a.get("speedups") or {}
        each = " | ".join(
            f"{sp[k]:.2f}x" if sp.get(k) else "-" for k in ("eager", "compile", "best")
        )
        summary = (a.get("summary") or "").replace("|", "\\|").replace("\n", " ")[:160]
        lines.append(
            f"| {a['index']} | {a['round']} | {a['source']} | {a['status']} | {each} | {summary} |"
        )
    for n in r.get("notes") or []:
        lines += ["", f"Note: {n}"]
    return "\n".join(lines) + "\n"


def _plot(ctx: RunContext, state: dict[str, Any]) -> None:
    """speedup.png: speedup of each timed attempt (GPU runs only; needs matplotlib)."""
    attempts = [a for a in state.get("attempts") or [] if a.get("speedup")]
    if not attempts:
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(
        [a["index"] for a in attempts],
        [a["speedup"] for a in attempts],
        color=["tab:green" if a["speedup"] >= 1 else "tab:red" for a in attempts],
    )
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("attempt")
    ax.set_ylabel(f"speedup over {ctx.config.baseline}")
    ax.set_title(ctx.rundir.run_id)
    fig.tight_layout()
    tmp = ctx.rundir.path / ".speedup.png.tmp"
    fig.savefig(tmp, format="png")
    plt.close(fig)
    tmp.replace(ctx.rundir.path / "speedup.png")
