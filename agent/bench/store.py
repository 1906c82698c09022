"""The output directory: every candidate and its verdict under OUT/<problem>/<NN>/, read back
for resuming and for rebuilding the report from the files alone."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.bench.records import Draft, Evaluated, SampleRecord, peak_memory
from agent.rundir import write_atomic
from tools.checks.roofline import slowdown_reason
from tools.core.errors import BadInputError
from tools.core.results import strict_json

log = logging.getLogger(__name__)


class BenchDir:
    """OUT/bench.json, OUT/<problem>/prompt.txt, OUT/<problem>/<NN>/{response.txt, kernel.py,
    verdict.json, profile.json, sample.json}, OUT/report.{md,json}, plots."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    def sample_dir(self, problem: str, sample: int) -> Path:
        return self.path / problem / f"{sample:02d}"

    def read_settings(self) -> dict[str, Any] | None:
        p = self.path / "bench.json"
        return json.loads(p.read_text()) if p.exists() else None

    def write_json(self, rel: str | Path, data: Any) -> None:
        write_atomic(self.path / rel, strict_json(data, indent=2) + "\n")

    def write_draft(self, d: Draft) -> None:
        sd = self.sample_dir(d.problem, d.sample)
        write_atomic(sd / "response.txt", d.response or "")
        if d.code:
            write_atomic(sd / "kernel.py", d.code)
        meta = {"source": d.source, "drafted_at": d.drafted_at, "draft_s": d.draft_s}
        write_atomic(sd / "draft.json", json.dumps(meta) + "\n")

    def read_draft(self, problem: str, sample: int) -> Draft | None:
        """A candidate drawn before an interruption but not yet evaluated (not asked again)."""
        sd = self.sample_dir(problem, sample)
        if not (sd / "draft.json").exists():
            return None
        meta = json.loads((sd / "draft.json").read_text())
        code = (sd / "kernel.py").read_text() if (sd / "kernel.py").exists() else None
        response = (sd / "response.txt").read_text() if (sd / "response.txt").exists() else ""
        return Draft(
            problem=problem,
            sample=sample,
            source=meta["source"],
            response=response,
            code=code,
            drafted_at=meta.get("drafted_at"),
            draft_s=float(meta.get("draft_s") or 0.0),
        )

    def write_evaluated(self, ev: Evaluated) -> None:
        d = ev.draft
        self.write_draft(d)  # a compiler draft is only known now
        sd = self.sample_dir(d.problem, d.sample)
        write_atomic(sd / "verdict.json", strict_json(ev.verdict, indent=2) + "\n")
        if ev.profile is not None:
            write_atomic(sd / "profile.json", strict_json(ev.profile, indent=2) + "\n")
        # sample.json last: its presence means "done".
        write_atomic(sd / "sample.json", json.dumps(ev.record.to_dict(), indent=2) + "\n")

    def done_samples(self, problem: str) -> dict[int, SampleRecord]:
        out: dict[int, SampleRecord] = {}
        pdir = self.path / problem
        if not pdir.is_dir():
            return out
        for sd in pdir.iterdir():
            if sd.is_dir() and sd.name.isdigit() and (sd / "sample.json").exists():
                rec = _read_record(sd, problem)
                if rec is not None:
                    if not rec.memory:  # written before the tools reported memory
                        rec.memory = peak_memory(
                            _read_json(sd / "verdict.json"), _read_json(sd / "profile.json")
                        )
                    out[int(sd.name)] = rec
        return out

    def problems_on_disk(self) -> list[str]:
        if not self.path.is_dir():
            return []
        return sorted(
            p.name
            for p in self.path.iterdir()
            if p.is_dir()
            and (
                (p / "problem.json").exists()
                or any(c.is_dir() and c.name.isdigit() for c in p.iterdir())
            )
        )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_record(sd: Path, problem: str) -> SampleRecord | None:
    try:
        record = SampleRecord.from_dict(json.loads((sd / "sample.json").read_text()))
    except (OSError, ValueError, TypeError):
        pass
    else:
        if record.correct and not record.limit:  # written before records carried it
            try:
                record.limit = slowdown_reason(json.loads((sd / "profile.json").read_text())) or ""
            except (OSError, ValueError):
                pass
        return record
    # sample.json unreadable: rebuild what the verdict says
    try:
        v = json.loads((sd / "verdict.json").read_text())
    except (OSError, ValueError):
        return None
    return SampleRecord(
        problem=problem,
        sample=int(sd.name),
        source="?",
        status=v["status"],
        correct=bool(v["correct"]),
        compiled=bool(v.get("compiled")),
        device=v.get("device", "cpu"),
    )


def discover_problems(path: str | os.PathLike[str], only: Sequence[str] = ()) -> list[str]:
    p = Path(path)
    if p.is_file():
        files = [p]
    elif p.is_dir():
        files = sorted(
            f for f in p.glob("*.py") if f.name != "__init__.py" and not f.name.startswith(".")
        )
    else:
        raise BadInputError(f"problem directory not found: {path}")
    if only:
        wanted = set(only)
        files = [f for f in files if f.stem in wanted]
        missing = wanted - {f.stem for f in files}
        if missing:
            raise BadInputError(
                f"--only names problems not in {path}: {', '.join(sorted(missing))}"
            )
    if not files:
        raise BadInputError(f"no problem .py files in {path}")
    return [str(f) for f in files]


ProblemRows = list[tuple[str, list[SampleRecord], str | None, bool | None]]


def load_results(out: str | os.PathLike[str]) -> tuple[dict[str, Any], ProblemRows]:
    """OUT/'s settings and, per problem, (name, records, error, finished): what
    `compute_report` takes. Reads the files only; writes nothing."""
    bdir = BenchDir(out)
    settings = bdir.read_settings()
    if settings is None:
        raise BadInputError(f"{out} is not a benchmark directory (no bench.json)")
    names = settings.get("problems") or bdir.problems_on_disk()
    problems: ProblemRows = []
    for name in names:
        recs = sorted(bdir.done_samples(name).values(), key=lambda r: r.sample)
        err_file = bdir.path / name / "error.json"
        err = json.loads(err_file.read_text())["error"] if err_file.exists() else None
        finished = (bdir.path / name / "done.json").exists() if settings["mode"] == "loop" else None
        problems.append((name, recs, err, finished))
    return settings, problems


def default_out() -> str:
    return os.path.join(
        os.environ.get("TRITON_AGENT_RUNS", "runs"), f"bench-{time.strftime('%Y%m%d-%H%M%S')}"
    )
