"""KernelBench in and out: name a level and problem ids; write a bench run in KernelBench's layout.

In: KernelBench keeps its problems as `KernelBench/level<L>/<id>_<Name>.py` (e.g.
`level1/19_ReLU.py`). `select_problems(DIR, level, "1-10,19")` finds them under `DIR`, which may
be the KernelBench checkout, its `KernelBench/` folder or the level folder itself.

Out: KernelBench's `scripts/eval_from_generations.py` reads a run from `runs/<run>/` as
`level_<L>_problem_<id>_sample_<s>_kernel.py` (sample ids from 0) and keeps its results in
`runs/<run>/eval_results.json`: `{"<problem id>": [{"sample_id", "compiled", "correctness",
"metadata", "runtime", "runtime_stats"}, ...]}` (runtime: mean ms, -1.0 when not timed). It
skips every problem already listed in that file, so `export_run(BENCH_OUT, RUN_DIR)` writes the
kernels under KernelBench's names and our verdicts in the same format beside them, under a name of
our own (`triton_agent_eval_results.json`): KernelBench's scripts then re-evaluate every exported
generation, and the two files compare entry by entry. With timings of the `kernelbench` protocol
it also writes `baseline_time_torch.json` in the shape of KernelBench's
`results/timing/<GPU>/baseline_time_torch.json` (`{"level<L>": {"<file>.py": stats}}`). Each
entry also says whether KernelBench's own judge would accept the kernel, and why not (its static
checker on the exported file, its tolerance against the error our verification measured:
`agent.kernelbench_accept`), in its metadata and in `triton_agent_kernelbench_acceptance.md`.
"""

from __future__ import annotations

import builtins
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.kernelbench_accept import acceptance, checker_path, load_static_checker
from agent.rundir import write_atomic
from tools.core.errors import BadInputError
from tools.core.results import strict_json

_ID = re.compile(r"^(\d+)_")
_LEVEL = re.compile(r"level_?(\d+)$")

# Our verdict statuses as the metadata key KernelBench files the failure under (its
# eval_kernel_against_ref writes `<key>` and `<key>_name`; its batch_eval writes a timeout as
# `{"error": "Evaluation timed out"}`, see `TIMEOUT_METADATA`).
_KB_ERROR_KEY = {
    "syntax_error": "compilation_error",
    "compile_error": "compilation_error",
    "bad_input": "compilation_error",
    "runtime_error": "runtime_error",
    "crash": "runtime_error",
    "resource": "runtime_error",
    "mismatch": "correctness_issue",
    "shape_mismatch": "correctness_issue",
    "policy": "correctness_issue",
    "cheat": "correctness_issue",
}

TIMEOUT_METADATA = {"error": "Evaluation timed out"}
"""KernelBench's record of a sample that ran past its timeout (scripts/eval_from_generations.py,
batch_eval): not compiled, not correct, runtime -1.0, no stats."""

ACCEPTANCE_NAME = "triton_agent_kernelbench_acceptance.md"
"""The export's table: per generation, whether KernelBench's judge would accept it and why not."""

RESULTS_NAME = "triton_agent_eval_results.json"
"""Our verdicts in RUN_DIR, in eval_results.json's format under a name KernelBench never reads."""

_KB_RESULTS_NAME = "eval_results.json"
_EXPORT_MODE = 0o644  # write_atomic's temporary files are 0600; KernelBench's readers may be others


def parse_ids(text: str) -> list[int]:
    """`"1-10,19"` -> [1, ..., 10, 19] (sorted, unique). Raises BadInputError on anything else."""
    ids: set[int] = set()
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:\s*-\s*(\d+))?", part)
        if not m:
            raise BadInputError(
                f"--problems takes ids and ranges separated by commas (e.g. 1-10,19), not {part!r}"
            )
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if lo < 1 or hi < lo:
            raise BadInputError(f"--problems: {part!r} is not a range of ids from 1 up")
        ids.update(range(lo, hi + 1))
    if not ids:
        raise BadInputError("--problems names no problem ids")
    return sorted(ids)


def problem_id(path: str | Path) -> int | None:
    """KernelBench's id of a problem file (`19_ReLU.py` -> 19), None when the name has none."""
    m = _ID.match(Path(path).name)
    return int(m.group(1)) if m else None


def level_of(path: str | Path) -> int | None:
    """The level a folder holds by its name (`level1`, `level_2`), None when it does not say."""
    m = _LEVEL.search(Path(path).name)
    return int(m.group(1)) if m else None


def level_dir(root: str | Path, level: int) -> Path:
    """The folder of `level` under a KernelBench checkout (or `root` when it is that folder)."""
    root = Path(root)
    if level_of(root) == level and root.is_dir():
        return root
    for cand in (
        root / f"level{level}",
        root / "KernelBench" / f"level{level}",
        root / f"level_{level}",
    ):
        if cand.is_dir():
            return cand
    raise BadInputError(
        f"no level {level} under {root}: expected {root}/level{level} or "
        f"{root}/KernelBench/level{level} (a KernelBench checkout)"
    )


def level_problems(root: str | Path, level: int) -> dict[int, Path]:
    """{id: file} of one level."""
    found: dict[int, Path] = {}
    for f in sorted(level_dir(root, level).glob("*.py")):
        pid = problem_id(f)
        if pid is not None:
            found[pid] = f
    return found


def select_problems(root: str | Path, level: int, ids: str | None = None) -> list[Path]:
    """The problem files of `level` with the given ids (all of the level when `ids` is None)."""
    if level < 1:
        raise BadInputError(f"--level must be 1 or more, got {level}")
    available = level_problems(root, level)
    if not available:
        raise BadInputError(f"no KernelBench problems (<id>_<Name>.py) in {level_dir(root, level)}")
    if ids is None:
        return [available[i] for i in sorted(available)]
    wanted = parse_ids(ids)
    missing = [i for i in wanted if i not in available]
    if missing:
        shown = ", ".join(str(i) for i in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise BadInputError(
            f"level {level} under {root} has no problem with id {shown} "
            f"(it has {min(available)}-{max(available)}, {len(available)} problems)"
        )
    return [available[i] for i in wanted]


# ---------------------------------------------------------------------------------------------
# Out


def kernel_name(level: int, pid: int, sample: int) -> str:
    """The file name KernelBench's eval_from_generations reads a generation from."""
    return f"level_{level}_problem_{pid}_sample_{sample}_kernel.py"


@dataclass(kw_only=True)
class Export:
    """What `export_run` wrote."""

    run_dir: str
    level: int
    kernels: int
    problems: int
    skipped: list[str]
    """Problems left out, with why (no KernelBench id in the name)."""
    acceptance: dict[str, int]
    """Kernels KernelBench's judge would accept (`yes`), refuse (`no`) or may (`unknown`), as
    predicted from our verdicts and its static checker (`agent.kernelbench_accept`)."""
    checker: str | None
    """The KernelBench static checker the export ran, None where none was found."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def export_run(
    bench_out: str | Path,
    run_dir: str | Path,
    level: int | None = None,
    *,
    checker: str | Path | None = None,
) -> Export:
    """Write bench directory `bench_out`'s generations and verdicts in KernelBench's layout,
    each entry saying whether KernelBench's judge would accept it and why not
    (`agent.kernelbench_accept.acceptance`, with KernelBench's static checker from `checker` or
    the shared copy where present; also `ACCEPTANCE_NAME`, a table)."""
    bench_out, run_dir = Path(bench_out), Path(run_dir)
    kb_checker = load_static_checker(checker)
    settings = _read(bench_out / "bench.json")
    if not isinstance(settings, dict):
        raise BadInputError(f"{bench_out} is not a benchmark directory (no bench.json)")
    if level is None:
        level = settings.get("kernelbench_level") or level_of(settings.get("problems_path") or "")
    if level is None:
        raise BadInputError(
            f"cannot tell the KernelBench level of {bench_out} (its problems came from "
            f"{settings.get('problems_path')}): pass --level"
        )
    names = settings.get("problems") or sorted(
        p.name for p in bench_out.iterdir() if p.is_dir() and problem_id(p.name) is not None
    )
    results: dict[str, list[dict[str, Any]]] = {}
    baselines: dict[str, dict[str, Any]] = {}
    skipped: list[str] = []
    kernels = 0
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        pid = problem_id(name)
        if pid is None:
            skipped.append(f"{name}: no KernelBench id in its name")
            continue
        pdir = bench_out / name
        samples = (
            sorted(
                (d for d in pdir.iterdir() if d.is_dir() and d.name.isdigit()),
                key=lambda d: int(d.name),
            )
            if pdir.is_dir()
            else []
        )
        for sd in samples:
            sample = int(sd.name)
            record = _read(sd / "sample.json")
            if not isinstance(record, dict):
                continue  # not evaluated yet: KernelBench would not find it either
            kernel = sd / "kernel.py"
            source = kernel.read_text() if kernel.exists() else None
            if source is not None:
                _write_export(run_dir / kernel_name(level, pid, sample), source)
                kernels += 1
            profile = _read(sd / "profile.json") or {}
            entry = _entry(sd, sample, record, profile, source, settings, kb_checker)
            results.setdefault(str(pid), []).append(entry)
            eager = (profile.get("kernelbench") or {}).get("eager")
            if eager and f"{name}.py" not in baselines:
                baselines[f"{name}.py"] = _stats(eager, profile)
    ordered = {k: results[k] for k in sorted(results, key=int)}
    _write_export(run_dir / RESULTS_NAME, strict_json(ordered, indent=4) + "\n")
    _drop_our_old_eval_results(run_dir / _KB_RESULTS_NAME)
    _write_export(run_dir / ACCEPTANCE_NAME, acceptance_markdown(ordered, level))
    if baselines:
        _write_export(
            run_dir / "baseline_time_torch.json",
            strict_json({f"level{level}": baselines}, indent=4) + "\n",
        )
    return Export(
        run_dir=str(run_dir),
        level=int(level),
        kernels=kernels,
        problems=len(ordered),
        skipped=skipped,
        acceptance=_acceptance_counts(ordered),
        checker=str(checker_path(checker)) if kb_checker is not None else None,
    )


def _entry(
    sd: Path,
    sample: int,
    record: dict[str, Any],
    profile: dict[str, Any],
    source: str | None,
    settings: dict[str, Any],
    kb_checker: Any,
) -> dict[str, Any]:
    """One sample's entry, with whether KernelBench's judge would accept it (its metadata's
    `triton_agent_kernelbench_judge`)."""
    verdict = _read(sd / "verdict.json") or {}
    entry = eval_entry(sample, record, verdict, profile, has_kernel=source is not None)
    precision = str(verdict.get("precision") or settings.get("precision") or "fp32")
    judged = acceptance(source, {**verdict, **_record_verdict(record)}, kb_checker, precision)
    entry["metadata"]["triton_agent_kernelbench_judge"] = judged
    return entry


def _record_verdict(record: dict[str, Any]) -> dict[str, Any]:
    """The verdict fields the sample record has too (the verdict file may be missing)."""
    out: dict[str, Any] = {}
    if "correct" in record:
        out["correct"] = bool(record.get("correct"))
    if record.get("status"):
        out["status"] = record["status"]
    return out


def _judged(results: dict[str, list[dict[str, Any]]]) -> list[tuple[str, dict, dict]]:
    """(problem id, entry, its `triton_agent_kernelbench_judge`) for every exported entry."""
    return [
        (pid, e, e["metadata"]["triton_agent_kernelbench_judge"])
        for pid, entries in results.items()
        for e in entries
        if "triton_agent_kernelbench_judge" in e.get("metadata", {})
    ]


def _acceptance_counts(results: dict[str, list[dict[str, Any]]]) -> dict[str, int]:
    counts = {"yes": 0, "no": 0, "unknown": 0}
    for _, _, judged in _judged(results):
        counts[judged["would_accept"]] = counts.get(judged["would_accept"], 0) + 1
    return counts


def acceptance_markdown(results: dict[str, list[dict[str, Any]]], level: int) -> str:
    """One row per exported generation: our verdict, whether KernelBench's judge would accept
    it, its static checker's result, the error against its reference and its tolerance."""
    lines = [
        f"# Would KernelBench's judge accept these? (level {level})",
        "",
        "Predicted from this project's verdicts (agent/kernelbench_accept.py): KernelBench's static "
        "checker run on each exported file, and its correctness tolerance against the error our "
        "verification measured against the reference as KernelBench runs it (TF32 convolutions: "
        "`--reference-numerics pytorch-default` on a GPU), else not measured.",
        "",
        "| kernel | ours | KernelBench would accept | static checker | error vs its reference "
        "| its tolerance | why not |",
        "|---|---|---|---|---|---|---|",
    ]
    for pid, entry, judged in _judged(results):
        static = judged["static"]
        static_text = (
            "not run" if not static["checked"] else "valid" if static["valid"] else "invalid"
        )
        correct = judged["correctness"]
        measured = correct.get("measured")
        lines.append(
            f"| {kernel_name(level, int(pid), entry['sample_id'])} "
            f"| {entry['metadata'].get('triton_agent_status') or '-'} "
            f"| {judged['would_accept']} | {static_text} "
            f"| {'not measured' if measured is None else f'{measured:.3g}'} "
            f"| {correct.get('tolerance', '-')} "
            f"| {'; '.join(judged['why_not']).replace('|', '/') or '-'} |"
        )
    return "\n".join(lines) + "\n"


def eval_entry(
    sample: int,
    record: dict[str, Any],
    verdict: dict[str, Any],
    profile: dict[str, Any],
    *,
    has_kernel: bool = True,
) -> dict[str, Any]:
    """One sample as KernelBench's `add_to_eval_results_file` writes it."""
    status = str(record.get("status") or verdict.get("status") or "")
    correct = bool(record.get("correct"))
    metadata: dict[str, Any] = {
        "hardware": profile.get("device") or record.get("device") or "cpu",
        "device": "cuda:0" if record.get("device") == "cuda" else "cpu",
        "triton_agent_status": status,
        "triton_agent_summary": record.get("summary") or "",
    }
    trials = verdict.get("trials") or (verdict.get("evidence") or {}).get("trials")
    if isinstance(trials, int) and trials > 0:
        metadata["correctness_trials"] = f"({trials if correct else 0} / {trials})"
    if status == "timeout":
        metadata.update(TIMEOUT_METADATA)
    elif not correct:
        key = _KB_ERROR_KEY.get(status, "other_error")
        metadata[key] = (verdict.get("message") or record.get("summary") or status)[:1024]
        metadata[f"{key}_name"] = _error_name(key, status, verdict)
    if not has_kernel:
        metadata["other_error"] = "no code in the generation"
        metadata["other_error_name"] = "triton_agent.no_code"
    runtime, stats = -1.0, {}
    kb = (profile.get("kernelbench") or {}).get("candidate")
    if correct and kb:
        stats = _stats(kb, profile)
        runtime = stats["mean"]
        metadata["timing_method"] = "kernelbench"
    elif correct and isinstance(profile.get("candidate"), dict):
        cand = profile["candidate"]  # ours (median of padded, L2-flushed events): say so
        median = cand.get("median_ms")
        if isinstance(median, (int, float)):
            runtime = round(float(median), 3)
            stats = {
                "median": runtime,
                "num_trials": cand.get("n"),
                "hardware": profile.get("device"),
            }
            metadata["timing_method"] = "triton-agent median (not KernelBench's mean)"
    return {
        "sample_id": sample,
        "compiled": bool(record.get("compiled")) and status != "timeout",
        "correctness": correct,
        "metadata": metadata,
        "runtime": runtime,
        "runtime_stats": stats,
    }


def _error_name(key: str, status: str, verdict: dict[str, Any]) -> str:
    """The `<key>_name` KernelBench writes beside a failure: the exception's class as
    `module.Class` (its get_error_name), `SyntaxError` for code that does not parse, and
    `correctness_issue` for a wrong output; ours where the verdict names no exception."""
    if key == "correctness_issue":
        return "correctness_issue"
    if status == "syntax_error":
        return "SyntaxError"
    error = (verdict.get("evidence") or {}).get("error")
    kind = str(error.get("kind") or "") if isinstance(error, dict) else ""
    if kind.isidentifier():
        builtin = getattr(builtins, kind, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            return f"builtins.{kind}"
        return kind
    return f"triton_agent.{status or 'unknown'}"


def _write_export(path: Path, text: str) -> None:
    write_atomic(path, text)
    os.chmod(path, _EXPORT_MODE)


def _drop_our_old_eval_results(path: Path) -> None:
    """Remove an `eval_results.json` that an earlier export wrote (every entry carries our
    `triton_agent_status`): left there, KernelBench would skip every problem it lists. One that
    KernelBench wrote is its results and stays."""
    old = _read(path)
    if not isinstance(old, dict) or not old:
        return
    entries = [e for v in old.values() if isinstance(v, list) for e in v]
    if entries and all(
        isinstance(e, dict) and "triton_agent_status" in (e.get("metadata") or {}) for e in entries
    ):
        path.unlink()


def _stats(kb: dict[str, Any], profile: dict[str, Any]) -> dict[str, Any]:
    """KernelBench's `get_timing_stats` shape: ms rounded to 3 places."""
    out = {k: round(float(kb[k]), 3) for k in ("mean", "std", "min", "max") if k in kb}
    out["num_trials"] = int(kb.get("num_trials") or 0)
    out["hardware"] = profile.get("device") or "cuda"
    out["device"] = "cuda:0"
    return out


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# Command-line flags (bench, optimize)


def add_cli_options(p: Any, *, export: bool) -> None:
    """`--kernelbench DIR --level N [--problems IDS]`, and for bench `--export-kernelbench`."""
    g = p.add_argument_group("KernelBench")
    g.add_argument(
        "--kernelbench",
        default=None,
        metavar="DIR",
        help="a KernelBench checkout (or its level folder): take problems by --level and --problems",
    )
    g.add_argument("--level", type=int, default=None, help="KernelBench level (1, 2, 3, ...)")
    g.add_argument(
        "--problems",
        dest="kb_problems",
        default=None,
        metavar="IDS",
        help="KernelBench problem ids, e.g. 1-10,19 (default: the whole level)",
    )
    if export:
        g.add_argument(
            "--export-kernelbench",
            default=None,
            metavar="RUN_DIR",
            help="also write the generations and verdicts in KernelBench's layout "
            "(RUN_DIR/level_<L>_problem_<id>_sample_<s>_kernel.py for KernelBench's "
            f"eval_from_generations.py; our verdicts in RUN_DIR/{RESULTS_NAME})",
        )
        g.add_argument(
            "--kernelbench-checker",
            default=None,
            metavar="PATH",
            help="KernelBench's kernel_static_checker.py (or a KernelBench checkout) for the "
            "export to run on each kernel (default: ../shared/kernelbench-eval where present)",
        )


def resolve_cli(args: Any, *, one: bool = False) -> list[Path] | None:
    """The problem files the KernelBench flags name (None without --kernelbench). `one`: the
    command takes exactly one problem (optimize)."""
    if not getattr(args, "kernelbench", None):
        if getattr(args, "kb_problems", None) and not getattr(args, "level", None):
            raise BadInputError("--problems needs --kernelbench DIR and --level N")
        return None
    if args.level is None:
        raise BadInputError("--kernelbench needs --level N")
    files = select_problems(args.kernelbench, args.level, args.kb_problems)
    if one and len(files) != 1:
        raise BadInputError(
            f"optimize takes one problem: --problems names {len(files)} (give one id, e.g. 19)"
        )
    return files
