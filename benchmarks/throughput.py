"""Candidates fully evaluated per minute: this benchmark runner vs a naive harness.

- **runner**: `agent.bench.evaluate_sample` through one `Verifier` (warm forkserver sandbox with
  torch/triton preloaded, reference outputs cached per problem, one slot per GPU or CPU core,
  candidates submitted from a thread pool). On a GPU "fully evaluated" = verified + timed
  (`tools.orchestrate.profile`, eager and torch.compile baselines, cached per problem).
- **naive**: one `subprocess.run([python, this file, "--naive-eval", problem, kernel])` per
  candidate, as KernelBench's eval does it: a fresh interpreter imports torch and triton, loads
  the problem and the kernel, compares 5 trials (and on a GPU times 100 trials of the candidate
  and of eager with CUDA events). Run one at a time (`naive`) and, for a fairer comparison,
  with as many processes in parallel as the runner has slots (`naive xN`).

Same candidates for all: every file of examples/kernels and examples/broken with its problem,
repeated to --n (default 30). The same per-candidate timeout applies to both (the `timeout`
kernel costs it in each harness).

    python benchmarks/throughput.py [--n 30] [--timeout 10] [--record benchmarks/results/throughput_cpu.md]

Imports only `tools/` and `agent.bench` (no langgraph, rich or openai), so it runs on a bare
GPU box. The naive evaluation imports only torch and triton.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from _examples import example_kernels, problem_for

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# The naive harness's evaluation (runs in a fresh interpreter; torch and triton only)


def naive_eval(problem_path: str, kernel_path: str, trials: int = 5, tol: float = 1e-2) -> dict:
    import torch
    import triton  # noqa: F401 - KernelBench's eval imports it too

    cuda = torch.cuda.is_available()
    dev = "cuda" if cuda else "cpu"

    def load(path: str, name: str):
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        return mod

    ref = load(problem_path, "ref_module")
    new = load(kernel_path, "new_module")
    torch.manual_seed(42)
    init = ref.get_init_inputs()
    model = ref.Model(*init).to(dev)
    torch.manual_seed(42)
    model_new = new.ModelNew(*init).to(dev)
    model_new.load_state_dict(model.state_dict(), strict=False)
    t0 = time.perf_counter()
    for t in range(trials):
        torch.manual_seed(1000 + t)
        inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
        with torch.no_grad():
            expected = model(*inputs)
            got = model_new(*inputs)
        exp = expected if isinstance(expected, (tuple, list)) else [expected]
        out = got if isinstance(got, (tuple, list)) else [got]
        if len(exp) != len(out) or any(e.shape != o.shape for e, o in zip(exp, out, strict=False)):
            return {"correct": False, "why": "shape", "runs_s": time.perf_counter() - t0}
        if not all(
            torch.allclose(e, o, atol=tol, rtol=tol) for e, o in zip(exp, out, strict=False)
        ):
            return {"correct": False, "why": "mismatch", "runs_s": time.perf_counter() - t0}
    result: dict = {"correct": True, "runs_s": time.perf_counter() - t0}
    if cuda:  # KernelBench-style timing: CUDA events, 3 warm-ups, 100 trials, new and eager

        def time_it(fn) -> float:
            for _ in range(3):
                fn(*inputs)
            torch.cuda.synchronize()
            times = []
            for _ in range(100):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn(*inputs)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e))
            return sorted(times)[len(times) // 2]

        with torch.no_grad():
            result["new_ms"] = time_it(model_new)
            result["eager_ms"] = time_it(model)
    return result


# ---------------------------------------------------------------------------------------------
# The comparison


def candidates(n: int) -> list[tuple[str, str]]:
    """(problem path, kernel path): every example kernel with its problem, repeated to n."""
    pairs = [(str(problem_for(f)), str(f)) for f in example_kernels()]
    pairs = [(p, k) for p, k in pairs if Path(p).exists()]
    out = []
    while len(out) < n:
        out.extend(pairs)
    return out[:n]


def run_naive(
    pairs: list[tuple[str, str]], timeout: float, workers: int
) -> tuple[float, list[bool], float]:
    """Wall time, verdicts, and the mean per-candidate time outside the kernels' own runs
    (interpreter start, imports, loading: the harness's overhead)."""
    import torch

    from tools.sandboxing.slots import visible_device_id

    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if not torch.cuda.is_available():  # must be set before triton is imported
        env["TRITON_INTERPRET"] = "1"

    overheads: list[float] = []
    gpus = torch.cuda.device_count()

    def one(item: tuple[int, tuple[str, str]]) -> bool:
        i, pair = item
        job_env = env
        if workers > 1 and gpus > 1:  # parallel naive workers spread over the GPUs, like the runner
            # the (i % gpus)-th GPU this process sees, as a child's CUDA_VISIBLE_DEVICES
            job_env = {**env, "CUDA_VISIBLE_DEVICES": visible_device_id(i % gpus)}
        start = time.perf_counter()
        try:
            p = subprocess.run(
                [sys.executable, __file__, "--naive-eval", *pair],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=job_env,
            )
        except subprocess.TimeoutExpired:
            return False
        wall = time.perf_counter() - start
        try:
            res = json.loads(p.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            overheads.append(wall)  # died while loading or running: all of it counts
            return False
        overheads.append(wall - res.get("runs_s", 0.0))
        return bool(res["correct"])

    t0 = time.perf_counter()
    with cf.ThreadPoolExecutor(max_workers=workers) as pool:
        ok = list(pool.map(one, enumerate(pairs)))
    return time.perf_counter() - t0, ok, sum(overheads) / max(len(overheads), 1)


def run_runner(
    pairs: list[tuple[str, str]],
    timeout: float,
    aot: str | None,
    compile_baseline: bool = False,
    jobs_per_gpu: int = 1,
) -> tuple[float, float, list[bool], dict]:
    sys.path.insert(0, str(ROOT))
    from agent.bench import Draft, evaluate_sample
    from tools.core.problem import read_problem
    from tools.orchestrate.profile import ProfileOptions
    from tools.orchestrate.verify import Verifier, VerifyOptions

    # The naive harness times the candidate and eager only; so does the runner unless asked
    # (a torch.compile baseline costs a compile per problem: tens of seconds on the H200).
    opts = ProfileOptions(baseline="eager", compile_baseline=compile_baseline)
    t0 = time.perf_counter()
    v = Verifier(
        VerifyOptions(trials=5, timeout_s=timeout, aot_target=aot, jobs_per_gpu=jobs_per_gpu)
    )
    problems = {p: read_problem(p) for p, _ in pairs}
    drafts = [
        Draft(problem=Path(p).stem, sample=i, source="file", code=Path(k).read_text())
        for i, (p, k) in enumerate(pairs)
    ]
    done: list[float] = []  # completion times, from t0

    def one(i: int):
        ev = evaluate_sample(v, problems[pairs[i][0]], drafts[i], profile_opts=opts)
        done.append(time.perf_counter() - t0)
        return ev

    with cf.ThreadPoolExecutor(max_workers=v.sandbox.slots) as pool:
        evs = list(pool.map(one, range(len(pairs))))
    wall = time.perf_counter() - t0
    done.sort()
    first = done[0] if done else None
    # Sustained rate: completions after every slot has delivered one (the start, forkserver and
    # reference, is behind us), per minute. Needs more than two rounds of slots to mean anything.
    k = v.sandbox.slots
    steady = (
        60.0 * (len(done) - k) / (done[-1] - done[k - 1])
        if len(done) > 2 * k and done[-1] > done[k - 1]
        else None
    )
    # Harness overhead: a candidate's evaluation minus its kernels' own runs (and AOT compile).
    timed = [e for e in evs if e.record.status != "timeout"]
    own = [
        sum(e.verdict["evidence"]["timings"].get(k, 0.0) for k in ("runs", "aot")) for e in timed
    ]
    overhead = sum(e.record.duration_s - o for e, o in zip(timed, own, strict=True)) / max(
        len(timed), 1
    )
    phases: dict[str, list[float]] = {}
    vphases: dict[str, list[float]] = {}
    for e in evs:
        for k, val in ((e.profile or {}).get("timings") or {}).items():
            phases.setdefault(k, []).append(val)
        if e.record.status in ("timeout", "syntax_error", "bad_input"):
            continue  # no job ran, or it was killed: not a verification job's cost
        for k, val in ((e.verdict.get("evidence") or {}).get("timings") or {}).items():
            vphases.setdefault(k, []).append(val)
        if isinstance(e.verdict.get("duration_s"), (int, float)):
            vphases.setdefault("total", []).append(e.verdict["duration_s"])
    info = {
        "timing_job_phases_s": {k: round(sum(v) / len(v), 3) for k, v in phases.items()},
        "verify_job_phases_s": {k: round(sum(v) / len(v), 3) for k, v in vphases.items()},
        "steady_per_min": steady,
        "device": v.device,
        "slots": v.sandbox.slots,
        "overhead_s": overhead,
        "statuses": {
            s: sum(e.record.status == s for e in evs)
            for s in sorted({e.record.status for e in evs})
        },
    }
    return wall, first or 0.0, [e.record.correct for e in evs], info


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--naive-eval", nargs=2, metavar=("PROBLEM", "KERNEL"), help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, default=30, help="candidates (default 30)")
    ap.add_argument(
        "--timeout", type=float, default=10.0, help="seconds per candidate, both harnesses"
    )
    ap.add_argument(
        "--aot",
        default=None,
        metavar="TARGET",
        help="CPU only: also compile ahead of time for a CUDA target (e.g. sm_90) in the "
        "runner; off by default, as the naive harness does nothing like it",
    )
    ap.add_argument("--skip-parallel-naive", action="store_true")
    ap.add_argument(
        "--jobs-per-gpu",
        type=int,
        default=1,
        help="GPU: verification jobs at once per GPU in the runner (timing stays exclusive)",
    )
    ap.add_argument(
        "--compile-baseline",
        action="store_true",
        help="GPU: the runner also times a torch.compile baseline per problem (the naive "
        "harness does not; off by default so both do the same work)",
    )
    ap.add_argument("--record", default=None, help="also write the result as markdown to this file")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.naive_eval:
        print(json.dumps(naive_eval(*args.naive_eval)))
        return 0

    pairs = candidates(args.n)
    print(f"{len(pairs)} candidates ({len(set(pairs))} distinct files)", file=sys.stderr)
    r_wall, r_first, r_ok, info = run_runner(
        pairs, args.timeout, args.aot, args.compile_baseline, args.jobs_per_gpu
    )
    print(f"runner: {r_wall:.1f} s", file=sys.stderr)
    n_wall, n_ok, n_over = run_naive(pairs, args.timeout, 1)
    print(f"naive: {n_wall:.1f} s", file=sys.stderr)
    p_wall = None
    if not args.skip_parallel_naive and info["slots"] > 1:
        p_wall, _, _ = run_naive(pairs, args.timeout, info["slots"])
        print(f"naive x{info['slots']}: {p_wall:.1f} s", file=sys.stderr)
    per_min = lambda wall: 60.0 * len(pairs) / wall
    disagree = [
        (Path(k).name, ours, theirs)
        for (p, k), ours, theirs in zip(pairs, r_ok, n_ok, strict=True)
        if ours != theirs
    ]
    res = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}",
        "device": info["device"],
        "slots": info["slots"],
        "candidates": len(pairs),
        "timeout_s": args.timeout,
        "aot_target": args.aot,
        "compile_baseline": args.compile_baseline,
        "jobs_per_gpu": args.jobs_per_gpu,
        "runner": {
            "wall_s": round(r_wall, 2),
            "per_min": round(per_min(r_wall), 1),
            "first_result_s": round(r_first, 2),
            "steady_per_min": None
            if info["steady_per_min"] is None
            else round(info["steady_per_min"], 1),
            "statuses": info["statuses"],
            "overhead_per_candidate_s": round(info["overhead_s"], 3),
        },
        "naive": {
            "wall_s": round(n_wall, 2),
            "per_min": round(per_min(n_wall), 1),
            "overhead_per_candidate_s": round(n_over, 3),
        },
        "ratio": round(n_wall / r_wall, 2),
        "steady_ratio": None
        if info["steady_per_min"] is None
        else round(info["steady_per_min"] / per_min(n_wall), 2),
        "command": "python benchmarks/throughput.py " + " ".join(sys.argv[1:]),
        "naive_parallel": None
        if p_wall is None
        else {
            "workers": info["slots"],
            "wall_s": round(p_wall, 2),
            "per_min": round(per_min(p_wall), 1),
            "ratio": round(p_wall / r_wall, 2),
        },
        "timing_job_phases_s": info["timing_job_phases_s"],
        "verify_job_phases_s": info["verify_job_phases_s"],
        "disagreements": [
            {"kernel": k, "runner_correct": a, "naive_correct": b}
            for k, a, b in sorted(set(disagree))
        ],
    }
    md = render(res)
    print(md)
    if args.record:
        Path(args.record).write_text(md)
    if args.json:
        print(json.dumps(res))
    return 0


def render(r: dict) -> str:
    lines = [
        "# Throughput: candidates fully evaluated per minute",
        "",
        f"Machine: {r['machine']}; device {r['device']}, {r['slots']} sandbox slot(s); "
        f"{r['candidates']} candidates (examples/kernels + examples/broken, repeated); timeout "
        f"{r['timeout_s']:.0f} s per candidate in both harnesses; 5 trials each; ahead-of-time "
        f"compile in the runner: {r['aot_target'] or 'off'}"
        + (
            f"; on the GPU the runner times eager{' and torch.compile' if r.get('compile_baseline') else ''}"
            " baselines (the naive harness: eager)."
            if r["device"] == "cuda"
            else "."
        ),
        "",
        "| harness | wall (s) | candidates / min | runner is |",
        "|---|---|---|---|",
        f"| runner (warm forkserver, cached reference, {r['slots']} slots) | {r['runner']['wall_s']} | "
        f"{r['runner']['per_min']} | - |",
        f"| naive: one subprocess per candidate, sequential | {r['naive']['wall_s']} | {r['naive']['per_min']} | "
        f"**{r['ratio']}x** faster |",
    ]
    if r["naive_parallel"]:
        np_ = r["naive_parallel"]
        lines.append(
            f"| naive, {np_['workers']} subprocesses in parallel | {np_['wall_s']} | {np_['per_min']} | "
            f"{np_['ratio']}x faster |"
        )
    lines += [
        "",
        f"Runner statuses: {', '.join(f'{k} {v}' for k, v in r['runner']['statuses'].items())}; "
        f"first result after {r['runner']['first_result_s']} s (forkserver start + reference)."
        + (
            f" Once every slot has delivered a result, the runner sustains "
            f"{r['runner']['steady_per_min']} candidates/min: **{r['steady_ratio']}x** the naive "
            "harness's rate, which is what a long run approaches (the start is paid once per "
            "run)."
            if r["runner"].get("steady_per_min")
            else ""
        ),
        "",
        _overhead_text(r),
        "",
    ]
    if r.get("verify_job_phases_s"):
        lines += [
            "Verification job, mean seconds per phase inside the job (`setup`: problem, model, "
            "CUDA and Triton's driver in the fresh process; `import`: the candidate; `runs`: "
            "its trials; `aot`: the ahead-of-time compile; `total`: the verification as the runner "
            "saw it, process start and waiting for a slot included): "
            + ", ".join(f"{k} {v}" for k, v in r["verify_job_phases_s"].items())
            + ".",
            "",
        ]
    if r.get("timing_job_phases_s"):
        lines += [
            "Timing job, mean seconds per phase (GPU): "
            + ", ".join(f"{k} {v}" for k, v in r["timing_job_phases_s"].items())
            + " (`baselines_s` counts from the job's start).",
            "",
        ]
    if r["disagreements"]:
        lines.append(
            "Verdicts that differ (the naive harness has no Triton-launch audit, no poisoning, no "
            "device shim, tolerance 1e-2):"
        )
        for d in r["disagreements"]:
            lines.append(
                f"- `{d['kernel']}`: runner {'correct' if d['runner_correct'] else 'rejected'}, "
                f"naive {'correct' if d['naive_correct'] else 'rejected'}"
            )
        lines.append("")
    lines.append(
        "Reproduce: `"
        + r.get(
            "command",
            "python benchmarks/throughput.py --record benchmarks/results/throughput_cpu.md",
        )
        + "`."
    )
    return "\n".join(lines) + "\n"


def _overhead_text(r: dict) -> str:
    ours, theirs = r["runner"]["overhead_per_candidate_s"], r["naive"]["overhead_per_candidate_s"]
    text = (
        "Time per candidate outside its kernels' own runs (timeouts excluded): runner "
        f"{ours:.3f} s, naive {theirs:.3f} s. "
    )
    if r["device"] == "cuda":
        return text + (
            "The runner's figure is each candidate's latency in a parallel pool: it includes "
            "waiting for a slot and for the GPU's exclusive timing job, and a verification job "
            "and a separate timing job per candidate (each a fresh process); the naive harness "
            "verifies and times in one process with no L2 flush, no repeated independent runs and no "
            "profiler breakdown."
        )
    return text + (
        "Under the CPU interpreter the kernels' runs dominate both (the runner runs each "
        "candidate twice per trial, before and after the reference, as its protocol demands)."
    )


if __name__ == "__main__":
    sys.exit(main())
