"""Verified (PyTorch, Triton) pairs for fine-tuning: discover, verify, deduplicate, append.

A package: `records` (the record, keys, files), `discover`, `build`, `stats`.

`build()` turns sources into work items, verifies each candidate kernel in the sandbox (the
compiler drafter writes one first where a source has none) and appends one `PairRecord` per
verified kernel to a JSONL file. Three kinds of source (docs/dataset.md):

- a folder (or file) of KernelBench problems: each is drafted by the compiler drafter;
- a folder of plain modules with an input recipe (a sidecar `<name>.json`, or `get_inputs()` in
  the file): each becomes a KernelBench problem, then is drafted like one;
- a folder of kernels (`class ModelNew`), each paired by file name with a problem;
- a run directory (`runs/<id>/`) or a folder of them: every attempt whose verdict.json says
  `ok`, re-verified here first (a verdict file is a claim, not evidence).

Only kernels whose fresh verdict is `ok` are written. Pairs are deduplicated on normalised code
(comments, docstrings and formatting removed). Every work item's outcome goes to a ledger next to
the output (`pairs.ledger.jsonl`), so an interrupted or repeated build skips what it has done.

Heavy imports (torch, the drafter, profiling) are made where they are used, so this module loads
on a machine without the loop's dependencies (langgraph, rich, openai).
"""

from agent.dataset.build import BuildSummary, build
from agent.dataset.discover import Discovery, WorkItem, discover, module_to_problem
from agent.dataset.records import (
    OP_FAMILIES,
    SCHEMA_VERSION,
    PairRecord,
    classify_op,
    ledger_path,
    normalize_code,
    pair_key,
    read_jsonl,
    read_pairs,
)
from agent.dataset.stats import plot_stats, stats

__all__ = [
    "OP_FAMILIES",
    "SCHEMA_VERSION",
    "BuildSummary",
    "Discovery",
    "PairRecord",
    "WorkItem",
    "build",
    "classify_op",
    "discover",
    "ledger_path",
    "module_to_problem",
    "normalize_code",
    "pair_key",
    "plot_stats",
    "read_jsonl",
    "read_pairs",
    "stats",
]
