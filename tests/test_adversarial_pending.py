"""The pending adversarial corpus (tests/adversarial_pending/): kinds the verifier still gets
wrong, kept out of CI's verification runs. Checks only that the folder stays usable: every kind
parses as a corpus case of an existing problem, has its line in the README, and is in one folder
only (a kind moved to tests/adversarial/ when its fix lands leaves no stale copy or line)."""

from __future__ import annotations

import re

from benchmarks.adversarial_figures import CORPUS, PENDING, load_corpus
from tools.core.results import STATUSES

README = PENDING / "README.md"


def _readme_kinds() -> list[str]:
    rows = [line for line in README.read_text().splitlines() if line.startswith("| ")]
    names = [re.match(r"\|\s*([\w]+__[\w]+)\s*\|", r) for r in rows]
    return [m.group(1) for m in names if m]


def test_pending_kinds_are_well_formed():
    for case in load_corpus(PENDING):
        assert case.problem.exists(), (case.name, case.problem)
        assert set(case.expected) <= set(STATUSES), (case.name, case.expected)
        assert "ok" not in case.expected or case.expected == ("ok",), case.name


def test_every_pending_kind_has_one_readme_line():
    kinds = sorted(c.name for c in load_corpus(PENDING))
    listed = _readme_kinds()
    assert sorted(listed) == kinds, (
        f"README lines without a kind: {sorted(set(listed) - set(kinds))}; "
        f"kinds without a line: {sorted(set(kinds) - set(listed))}; "
        f"duplicates: {sorted({k for k in listed if listed.count(k) > 1})}"
    )


def test_no_kind_in_both_folders():
    both = {c.name for c in load_corpus(PENDING)} & {c.name for c in load_corpus(CORPUS)}
    assert not both, f"moved to tests/adversarial/ but still pending: {sorted(both)}"


def test_corpus_only_problems_resolve():
    """Kinds of problems that only the corpus needs find them under tests/fixtures/."""
    names = {c.problem.parent.name for c in load_corpus(CORPUS) + load_corpus(PENDING)}
    assert names <= {"problems", "adversarial_problems"}, names
