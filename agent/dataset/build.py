"""Building the pairs file: every item re-verified (`tools.orchestrate.evaluate`), duplicates dropped, a
ledger of outcomes, resumable."""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tools.orchestrate.evaluate
from agent.dataset.discover import WorkItem, discover
from agent.dataset.records import (
    RETRY_STATUSES,
    Event,
    PairRecord,
    _Appender,
    ledger_path,
    pair_key,
    read_jsonl,
)
from tools.core.errors import BadInputError, TritonAgentError

log = logging.getLogger(__name__)


# -- building ------------------------------------------------------------------------------------
@dataclass(kw_only=True)
class BuildSummary:
    out: str
    ledger: str
    items: int = 0
    """Work items discovered."""
    admitted: int = 0
    duplicates: int = 0
    resumed: int = 0
    """Items skipped because an earlier build finished them."""
    rejected: dict[str, int] = field(default_factory=dict)
    """Verdict status -> count, for kernels that failed re-verification."""
    retry_later: int = 0
    """Drafter failures and infrastructure errors (retried by the next build)."""
    records_total: int = 0
    skipped: list[str] = field(default_factory=list)
    device: str = "cpu"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def build(
    sources: Iterable[str],
    out: str | os.PathLike[str],
    *,
    verifier: Any,
    problems_dir: str | None = None,
    repo_name: str | None = None,
    license: str = "unknown",
    jobs: int | None = None,
    profile: bool | None = None,
    on_event: Event | None = None,
) -> BuildSummary:
    """Verify every candidate the sources hold and append the verified pairs to `out`.

    `verifier` is a `tools.orchestrate.verify.Verifier`; its sandbox bounds the parallelism (one job per core
    or GPU); `jobs` threads feed it (default: its slot count). `profile` (default: on a GPU) times
    each admitted kernel. Resumable: items finished by an earlier build of `out` are skipped."""
    emit = on_event or (lambda e: None)
    out_path = Path(out)
    ledger = ledger_path(out_path)
    device = verifier.device
    found = discover(sources, device=device, problems_dir=problems_dir, repo_name=repo_name)
    summary = BuildSummary(
        out=str(out_path),
        ledger=str(ledger),
        items=len(found.items),
        skipped=found.skipped,
        device=device,
    )
    for s in found.skipped:
        emit({"event": "skipped", "message": s})

    ledger_file = _lock_ledger(ledger, out_path)
    try:
        keys = {r.get("key") for r in read_jsonl(out_path)} - {None}
        todo = _todo(found.items, keys, ledger, summary)
        emit(
            {
                "event": "start",
                "items": len(found.items),
                "todo": len(todo),
                "device": device,
                "out": str(out_path),
            }
        )
        state = _BuildState(
            keys=keys, records=_Appender(out_path), ledger=ledger_file, summary=summary, emit=emit
        )
        try:
            _process_all(
                todo,
                verifier,
                state,
                jobs=jobs,
                license=license,
                profile=device == "cuda" if profile is None else profile,
            )
        finally:
            state.records.close()
        summary.records_total = len(state.keys)
    finally:
        ledger_file.close()  # releases the lock
    emit({"event": "finish", **summary.to_dict()})
    return summary


def _lock_ledger(ledger: Path, out_path: Path) -> _Appender:
    """The ledger, open for appending and locked: the lock keeps two builds off the same
    output (a second one is refused)."""
    ledger_file = _Appender(ledger)
    try:
        fcntl.flock(ledger_file.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        ledger_file.close()
        raise BadInputError(f"another `dataset build` is writing {out_path}") from None
    return ledger_file


def _todo(
    items: list[WorkItem], keys: set[str], ledger: Path, summary: BuildSummary
) -> list[WorkItem]:
    """The items an earlier build of the same output did not finish (a finished one is counted
    in `summary.resumed`): not in the ledger with a final status, nor a kernel already among
    the pairs (`keys`)."""
    done = {e["item"] for e in read_jsonl(ledger) if e.get("status") not in RETRY_STATUSES}
    todo = []
    for item in items:
        if item.key in done or (item.code is not None and item.key in keys):
            summary.resumed += 1
        else:
            todo.append(item)
    return todo


def _process_all(
    todo: list[WorkItem],
    verifier: Any,
    state: _BuildState,
    *,
    jobs: int | None,
    license: str,
    profile: bool,
) -> None:
    """Every item, `jobs` at a time (default: the verifier's sandbox slots); a compiler drafter
    made only when an item has no kernel of its own."""
    workers = max(1, jobs or verifier.sandbox.slots)
    drafter = _make_drafter(verifier) if any(i.code is None for i in todo) else None
    versions = _versions()
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dataset") as pool:
        for _ in pool.map(
            lambda it: _process(
                it, verifier, drafter, state, license=license, profile=profile, versions=versions
            ),
            todo,
        ):
            pass


@dataclass(kw_only=True)
class _BuildState:
    keys: set[str]
    records: _Appender
    ledger: _Appender
    summary: BuildSummary
    emit: Event
    lock: threading.Lock = field(default_factory=threading.Lock)

    def log(self, item: WorkItem, status: str, message: str = "", key: str | None = None) -> None:
        with self.lock:
            self.ledger.append(
                {
                    "item": item.key,
                    "origin": item.origin,
                    "source": item.source,
                    "status": status,
                    "message": message[:500],
                    "record": key,
                }
            )
            s = self.summary
            if status == "ok":
                s.admitted += 1
            elif status == "duplicate":
                s.duplicates += 1
            elif status in RETRY_STATUSES:
                s.retry_later += 1
            else:
                s.rejected[status] = s.rejected.get(status, 0) + 1
        self.emit(
            {
                "event": "item",
                "origin": item.origin,
                "source": item.source,
                "status": status,
                "message": message,
            }
        )


def _make_drafter(verifier: Any) -> Any:
    from agent.drafters import CompilerDrafter  # imported here: the loop's modules stay optional

    return CompilerDrafter(
        verifier.sandbox, verifier.device, generalize=verifier.options.generalize
    )


def _versions() -> dict[str, str]:
    import torch
    import triton

    return {"torch": torch.__version__, "triton": triton.__version__}


def _process(
    item: WorkItem,
    verifier: Any,
    drafter: Any,
    state: _BuildState,
    *,
    license: str,
    profile: bool,
    versions: dict[str, str],
) -> None:
    """Draft (if needed), dedup, verify, admit: one work item, never raising."""
    try:
        code = item.code
        if code is None:
            cand = drafter.draft(item.problem.source, os.path.abspath(item.problem.path))
            code = cand.get("code")
            if not code:
                state.log(item, "draft_failed", (cand.get("response") or "no code")[:500])
                return
        key = pair_key(item.problem.source, code)
        with state.lock:
            seen = key in state.keys
        if seen:
            state.log(
                item, "duplicate", "same normalised code as a pair already in the dataset", key
            )
            return
        verdict, timing = _check(item, code, verifier, profile)
        if verdict.status != "ok" or not verdict.correct:
            state.log(item, verdict.status, verdict.message)
            return
        record = PairRecord(
            entry_point="Model",
            python_code=item.problem.source,
            triton_code=code,
            repo_name=item.repo_name,
            module_name=item.module_name,
            license=license,
            key=key,
            source=item.source,
            verdict=verdict.status,
            trials=verdict.trials,
            atol=verdict.atol,
            rtol=verdict.rtol,
            policy=verdict.policy,
            mixed=verdict.mixed,
            device=timing.get("device") or ("cpu" if verifier.device == "cpu" else "cuda"),
            speedup=timing.get("speedup", item.speedup),
            speedup_compile=timing.get("speedup_compile", item.speedup_compile),
            timed_on=timing.get("timed_on", item.timed_on),
            provenance=item.provenance,
            versions=versions,
        )
        with state.lock:
            if key in state.keys:  # a parallel item got there first
                dup = True
            else:
                dup = False
                state.keys.add(key)
                state.records.append(record.to_dict())
        state.log(
            item, "duplicate" if dup else "ok", "" if not dup else "verified, but a duplicate", key
        )
    except TritonAgentError as e:
        state.log(item, "error", f"{type(e).__name__}: {e}")
    except Exception as e:  # a bug or broken infrastructure: say so, keep the other items going
        log.exception("dataset item %s failed", item.origin)
        state.log(item, "error", f"{type(e).__name__}: {e}")


def _check(item: WorkItem, code: str, verifier: Any, profile: bool) -> tuple[Any, dict[str, Any]]:
    """The fresh verdict, and on a GPU (with `profile`) the measured speedups
    (`tools.orchestrate.evaluate`: a profiler failure admits the pair on its verdict alone, untimed)."""
    ev = tools.orchestrate.evaluate.evaluate(
        item.problem, code, verifier=verifier, kernel_path="kernel.py", measure=profile
    )
    if not ev.speedups:
        return ev.verdict, {}
    device = (ev.profile or {}).get("device")
    return ev.verdict, {
        "device": device,
        "speedup": round(ev.speedups["eager"], 4) if "eager" in ev.speedups else None,
        "speedup_compile": round(ev.speedups["compile"], 4) if "compile" in ev.speedups else None,
        "timed_on": device,
    }
