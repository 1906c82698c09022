"""Benchmark runner (a package: `metrics`, `config`, `records`, `store`, `run`, `report`, `markdown`): pass@k, fast_p and reports over a directory of problems.

Two modes (docs/bench.md):
- `sample`: N independent candidates per problem, all drawn from the first-round prompt (the
  published KernelLLM protocol: temperature 1.0, top_p 0.97). pass@k is Chen et al.'s unbiased
  estimator over the N samples. With the compiler "backend", one compiler candidate per problem.
- `loop`: the agent (`agent.runner.run`) with a budget of N candidates per problem;
  success@k = a correct kernel among the first k candidates the loop drafted.

Every candidate and its verdict is kept under `OUT/<problem>/<NN>/` (`response.txt`,
`kernel.py`, `verdict.json`, `sample.json`, written last as the "done" mark), so a rerun skips
what is done and `rebuild_report(OUT)` makes the report from the files alone.

Verification runs through one `Verifier` (`--jobs-per-gpu` sandbox slots per GPU, or one per CPU
core) fed from a thread pool; `executor="ray"` sends one task per problem to a Ray cluster
instead, each task evaluating through the same `evaluate_sample`.

This module imports only `tools/` and the light `agent` modules (no langgraph, rich or openai):
the loop mode and the LLM backends are imported when used, so the compiler mode and the
throughput benchmark run on a machine without them.
"""

from agent.bench.config import BenchConfig, profile_options
from agent.bench.loop import loop_problem
from agent.bench.metrics import FAST_P, fast_p, geomean, pass_at_k, percentile, solved_within
from agent.bench.records import Draft, Evaluated, SampleRecord, evaluate_sample, peak_memory
from agent.bench.report import compute_report, problem_cost, problem_outcome, rebuild_report
from agent.bench.run import evaluate_problem, run_bench
from agent.bench.store import BenchDir, default_out, discover_problems, load_results

__all__ = [
    "FAST_P",
    "BenchConfig",
    "BenchDir",
    "Draft",
    "Evaluated",
    "SampleRecord",
    "compute_report",
    "default_out",
    "discover_problems",
    "evaluate_problem",
    "evaluate_sample",
    "fast_p",
    "geomean",
    "load_results",
    "loop_problem",
    "pass_at_k",
    "peak_memory",
    "percentile",
    "problem_cost",
    "problem_outcome",
    "profile_options",
    "rebuild_report",
    "run_bench",
    "solved_within",
]
