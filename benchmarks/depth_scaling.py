"""Where a deep network's time goes, against its depth (issue 33): synthetic CNNs of N conv-bn-relu
blocks (and a residual variant), drafted with the compiler drafter and verified, each phase timed.

    python benchmarks/depth_scaling.py --depths 4 8 16 32 --variants plain residual \
        --out benchmarks/results/cpu/depth_scaling

For each (variant, N): the problem (batch 1, 8 channels, 8x8 images by default; `--channels`,
`--size`, `--batch` for real sizes on a GPU) is drafted in this process under cProfile (the
draft's own phase note: reference forward, Inductor, rewriting, picks) and then verified through
`tools.orchestrate.verify.Verifier` with every job profiled (`TRITON_AGENT_JOB_PROFILE`: each job's cProfile
stats, `tools.sandboxing.job_process`). Written to `--out`:

- `rows.jsonl`: one row per (variant, N): the draft's phases, the candidate's size (lines,
  kernels, launches), the verdict, the candidate job's stage timings (setup, import, runs, aot),
  the judge's, and the largest cumulative entries of each profile, grouped into phases
  (`PHASES`: which harness function a phase is);
- `summary.md`: the table and, per phase, the exponent of a power-law fit of time against N
  (1: linear in the depth; 2: quadratic).

Interpreter timings say nothing about GPU speed; here they only show how the harness scales.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import pstats
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEVICE = "cpu"
"""Where drafts and verification run (`--device`): "cpu" (the interpreter) or "cuda"."""

PHASES: dict[str, tuple[str, ...]] = {
    # the draft (agent side or draft job): Inductor's compile, the drafter's own passes
    "draft.inductor": ("capture.py:capture_inductor",),
    "draft.load_kernels": ("kernels.py:load_kernels",),
    "draft.kernel_rewrite": ("kernels.py:rewrite",),
    "draft.rewrite_host": ("rewrite.py:rewrite_host",),
    "draft.conv_hook": ("rewrite.py:convolutions_in_triton",),
    "draft.describe_sizes": ("assemble.py:describe_sizes",),
    "draft.assemble": ("assemble.py:assemble", "assemble.py:with_conv_source"),
    # the candidate job
    "cand.exec_module": ("job_common.py:exec_module",),
    "cand.snapshot": ("integrity.py:__init__", "integrity.py:rebased"),
    "cand.integrity_changed": ("integrity.py:changed",),
    "cand.hooks": ("integrity.py:hooks",),
    "cand.forward": ("candidate.py:forward",),
    "cand.race_check": ("interp_races.py:check",),
    "cand.compute_block": ("compute_block.py:compute_blocked", "compute_block.py:__enter__"),
    "cand.aot_compile": ("aot.py:aot_compile_all",),
    "cand.export": ("handover.py:export_outputs",),
    "cand.lock_down": ("guard.py:lock_down",),
    "judge.compare": ("judge.py:_compare",),
    "judge.fp64": ("judge.py:_fp64_reference",),
}
"""Phase -> `file.py:function` entries (cProfile's file base name and function name) whose
cumulative time is that phase's (the largest one's: recursion is not counted twice). A name that
no longer exists shows as no entry: read `top` (by own time) then."""


def problem_source(
    depth: int, residual: bool = False, batch: int = 1, channels: int = 8, size: int = 8
) -> str:
    """A KernelBench problem: `depth` blocks of conv3x3 (no bias) -> BatchNorm2d -> ReLU, with a
    skip connection around each block's conv and batch norm in the residual variant."""
    body = (
        "return torch.relu(self.bn(self.conv(x)) + x)"
        if residual
        else "return torch.relu(self.bn(self.conv(x)))"
    )
    return f"""import torch
import torch.nn as nn

batch_size = {batch}
channels = {channels}
image_size = {size}
depth = {depth}


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x):
        {body}


class Model(nn.Module):
    def __init__(self, c, n):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(c) for _ in range(n)])

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(batch_size, channels, image_size, image_size)]


def get_init_inputs():
    return [channels, depth]
"""


def profile_rows(stats: pstats.Stats, top: int = 25) -> tuple[dict[str, float], list[dict]]:
    """Phase -> cumulative seconds, and the `top` entries by own time (where time is spent)."""
    raw = stats.stats  # type: ignore[attr-defined]
    phases: dict[str, float] = {}
    for (file, _line, name), (_cc, _nc, _tt, ct, _callers) in raw.items():
        key = f"{Path(file).name}:{name}"
        for phase, names in PHASES.items():
            if key in names:
                phases[phase] = round(max(phases.get(phase, 0.0), ct), 3)
    own = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    rows = [
        {
            "function": f"{Path(file).name}:{line}:{name}",
            "calls": nc,
            "own_s": round(tt, 3),
            "cumulative_s": round(ct, 3),
        }
        for (file, line, name), (_cc, nc, tt, ct, _callers) in own
    ]
    return phases, rows


def _load_stats(path: Path) -> pstats.Stats | None:
    try:
        return pstats.Stats(str(path))
    except Exception:  # noqa: BLE001 - a job killed before it wrote its stats
        return None


class Sampler:
    """A sampling profiler for this process (cProfile made Inductor's compile 5x slower: 64.6
    against 12.6 s at N=4): every `interval` seconds of CPU time (SIGPROF) the main thread's
    stack is read; a function's `own` count is samples where it was running, `cumulative`
    samples where it was on the stack. Seconds are samples x interval."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.own: Counter[str] = Counter()
        self.cumulative: Counter[str] = Counter()
        self.samples = 0

    def _sample(self, _signum: int, frame: Any) -> None:
        self.samples += 1
        seen = set()
        top = True
        while frame is not None:
            code = frame.f_code
            key = f"{Path(code.co_filename).name}:{code.co_firstlineno}:{code.co_name}"
            if top:
                self.own[key] += 1
                top = False
            if key not in seen:
                seen.add(key)
                self.cumulative[key] += 1
            frame = frame.f_back

    def __enter__(self) -> Sampler:
        self._before = signal.signal(signal.SIGPROF, self._sample)
        signal.setitimer(signal.ITIMER_PROF, self.interval, self.interval)
        return self

    def __exit__(self, *exc: object) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, self._before)

    def phases(self) -> dict[str, float]:
        """`PHASES` in CPU seconds (samples where one of the phase's functions was on the stack)."""
        out: dict[str, float] = {}
        for key, count in self.cumulative.items():
            file, _line, name = key.split(":", 2)
            for phase, names in PHASES.items():
                if f"{file}:{name}" in names:
                    out[phase] = round(max(out.get(phase, 0.0), count * self.interval), 3)
        return out

    def top(self, n: int = 25) -> list[dict]:
        return [
            {
                "function": key,
                "own_s": round(c * self.interval, 3),
                "cumulative_s": round(self.cumulative[key] * self.interval, 3),
            }
            for key, c in self.own.most_common(n)
        ]

    def top_cumulative(self, n: int = 40) -> list[dict]:
        return [
            {"function": key, "cumulative_s": round(c * self.interval, 3)}
            for key, c in self.cumulative.most_common(n)
        ]


def draft(source: str) -> tuple[dict, float, Sampler]:
    """The compiler draft in this process, sampled: (result as JSON, seconds, the sampler)."""
    from tools.draft import draft_candidate

    start = time.perf_counter()
    with Sampler() as sampler:
        result = draft_candidate(source, device=DEVICE)
    return result.to_json(), time.perf_counter() - start, sampler


def verify(
    problem_path: Path,
    source: str,
    job_dir: Path,
    trials: int,
    timeout_s: float = 1200.0,
    profile_jobs: bool = True,
) -> dict:
    """Verify `source` with every job profiled into `job_dir`; the verdict and each job's
    phases (cProfile), the agent side profiled too."""
    from tools.core.problem import read_problem
    from tools.orchestrate.verify import Verifier
    from tools.orchestrate.verify_options import VerifyOptions
    from tools.sandboxing.sandbox import JOB_PROFILE_DIR_ENV

    job_dir.mkdir(parents=True, exist_ok=True)
    if profile_jobs:
        os.environ[JOB_PROFILE_DIR_ENV] = str(job_dir)
    try:
        verifier = Verifier(VerifyOptions(trials=trials, device=DEVICE, timeout_s=timeout_s))
        problem = read_problem(problem_path)
        prof = cProfile.Profile()
        start = time.perf_counter()
        prof.enable()
        verdict = verifier.verify(problem, source)
        prof.disable()
        spent = time.perf_counter() - start
    finally:
        os.environ.pop(JOB_PROFILE_DIR_ENV, None)
    agent_stats = job_dir / "agent.pstats"
    prof.dump_stats(str(agent_stats))
    jobs = {}
    for path in sorted(job_dir.glob("*.pstats")):
        stats = _load_stats(path)
        if stats is None:
            continue
        name = path.stem.rsplit("-", 1)[-1] if path.name != "agent.pstats" else "agent"
        phases, top = profile_rows(stats)
        jobs.setdefault(name, []).append(
            {"total_s": round(stats.total_tt, 3), "phases": phases, "top": top}  # type: ignore[attr-defined]
        )
    data = verdict.to_dict()
    evidence = data.get("evidence") or {}
    return {
        "seconds": round(spent, 3),
        "status": verdict.status,
        "message": (verdict.message or "")[:300],
        "candidate_timings": {k: round(v, 3) for k, v in (evidence.get("timings") or {}).items()},
        "jobs": jobs,
    }


def summarize_profiles(directory: Path) -> list[dict]:
    """Every job profile (`*.pstats`) under `directory` as rows: the job, its total, phases and
    top entries by own time (for a bench run with TRITON_AGENT_JOB_PROFILE set)."""
    rows = []
    for path in sorted(directory.rglob("*.pstats")):
        stats = _load_stats(path)
        if stats is None:
            continue
        phases, top = profile_rows(stats)
        rows.append(
            {
                "file": path.name,
                "job": path.stem.rsplit("-", 1)[-1],
                "total_s": round(stats.total_tt, 3),  # type: ignore[attr-defined]
                "phases": phases,
                "top": top[:15],
            }
        )
    return rows


def launches(source: str) -> int:
    """Kernel launches and convolution calls written in the candidate's host code."""
    host = source[source.find("def call(") :]
    return host.count("](") + host.count("triton_convolution(")


def fit_exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(seconds) against log(N): 1 linear, 2 quadratic."""
    pts = [(math.log(n), math.log(s)) for n, s in points if s > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / den, 2) if den else None


def phase_table(rows: list[dict]) -> dict[str, dict[str, float]]:
    """(variant) -> phase -> {N: seconds} over every timed phase of every row."""
    out: dict[str, dict[str, dict[int, float]]] = {}
    for row in rows:
        table = out.setdefault(row["variant"], {})

        def put(name: str, secs: float | None, table=table, depth=row["depth"]) -> None:
            if secs is not None:
                table.setdefault(name, {})[depth] = secs

        put("draft.total", row.get("draft_s"))
        for k, v in (row.get("draft_phases") or {}).items():
            put(k, v)
        ver = row.get("verify") or {}
        put("verify.total", ver.get("seconds"))
        for k, v in (ver.get("candidate_timings") or {}).items():
            put(f"cand.stage.{k}", v)
        for job, runs in (ver.get("jobs") or {}).items():
            for k, v in (runs[0].get("phases") or {}).items() if runs else ():
                put(f"{job}:{k}", v)
            if runs:
                put(f"{job}:total", runs[0]["total_s"])
    return out  # type: ignore[return-value]


def summary(rows: list[dict]) -> str:
    where = "CPU, interpreter" if DEVICE == "cpu" else DEVICE
    lines = [
        f"# Depth scaling ({where})",
        "",
        "`draft s`, `draft.total`, `verify.total`, `*:total` and `cand.stage.*` are wall seconds;",
        "`draft.<phase>` are sampled CPU seconds of the draft; `<job>:<phase>` cProfile's",
        "cumulative seconds inside that job (under cProfile's overhead).",
        "",
    ]
    lines.append("| variant | N | kernels | launches | lines | draft s | verify s | verdict |")
    lines.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        ver = r.get("verify") or {}
        lines.append(
            f"| {r['variant']} | {r['depth']} | {r.get('kernels', '')} | {r.get('launches', '')} "
            f"| {r.get('lines', '')} | {r.get('draft_s', '')} | {ver.get('seconds', '')} "
            f"| {ver.get('status', r.get('error', ''))} |"
        )
    lines += ["", "## Seconds per phase and the exponent of N (1 linear, 2 quadratic)", ""]
    for variant, table in phase_table(rows).items():
        depths = sorted({n for v in table.values() for n in v})
        lines.append(f"### {variant}")
        lines.append("")
        lines.append("| phase | " + " | ".join(f"N={n}" for n in depths) + " | exponent |")
        lines.append("| --- | " + " | ".join("---" for _ in depths) + " | --- |")
        for phase, by_n in sorted(table.items()):
            cells = [f"{by_n[n]:.2f}" if n in by_n else "" for n in depths]
            lines.append(
                f"| {phase} | " + " | ".join(cells) + f" | {fit_exponent(sorted(by_n.items()))} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--variants", nargs="+", default=["plain", "residual"])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--no-verify", action="store_true", help="draft only")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--timeout", type=float, default=1200.0, help="a job's seconds")
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/cpu/depth_scaling"))
    parser.add_argument("--keep", help="a directory to keep problems, candidates and profiles")
    parser.add_argument(
        "--profile-summary",
        metavar="DIR",
        help="only summarise the job profiles under DIR (JSON lines to stdout) and exit",
    )
    parser.add_argument(
        "--no-job-profile", action="store_true", help="verify without profiling the jobs"
    )
    args = parser.parse_args(argv)
    if args.profile_summary:
        for row in summarize_profiles(Path(args.profile_summary)):
            print(json.dumps(row))
        return 0
    global DEVICE
    DEVICE = args.device
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="depth_scaling_"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    for variant in args.variants:
        for depth in args.depths:
            tag = f"{variant}_{depth}"
            source = problem_source(
                depth, variant == "residual", args.batch, args.channels, args.size
            )
            problem_path = work / f"{tag}.py"
            problem_path.write_text(source)
            row: dict = {"variant": variant, "depth": depth}
            try:
                result, spent, sampler = draft(source)
            except Exception as exc:  # noqa: BLE001 - a failed draft is a row too
                row["error"] = f"draft: {type(exc).__name__}: {exc}"[:300]
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
                continue
            candidate = result["source"]
            (work / f"{tag}.draft_samples.json").write_text(
                json.dumps(
                    {
                        "interval": sampler.interval,
                        "own": sampler.own,
                        "cumulative": sampler.cumulative,
                    }
                )
            )
            (work / f"{tag}.candidate.py").write_text(candidate)
            row.update(
                draft_s=round(spent, 2),
                draft_phases=sampler.phases(),
                draft_note=next((n for n in result["notes"] if "draft took" in n), None),
                draft_top=sampler.top(15),
                draft_top_cumulative=sampler.top_cumulative(30),
                kernels=len(result["kernels"]),
                launches=launches(candidate),
                lines=candidate.count("\n"),
            )
            if not args.no_verify:
                row["verify"] = verify(
                    problem_path,
                    candidate,
                    work / f"{tag}.jobs",
                    args.trials,
                    args.timeout,
                    not args.no_job_profile,
                )
            rows.append(row)
            print(
                f"{tag}: draft {row['draft_s']} s, verify "
                f"{(row.get('verify') or {}).get('seconds')} s "
                f"{(row.get('verify') or {}).get('status')}",
                file=sys.stderr,
            )
            with open(out / "rows.jsonl", "w") as f:
                for r in rows:
                    f.write(json.dumps(r) + "\n")
            (out / "summary.md").write_text(summary(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
