"""benchmarks/acceptance.py: issues 33, 35 and 36's "done when" checked against bench output.
On session 19's recorded H200 bench of level 3 (8 of 36 networks with a verdict) it must fail
what that bench did not reach; on made-up benches that meet a target it must pass, and each
seam (a cheat, two code versions, a refusal by KernelBench's judge, 95% of 156) must flip it."""

from __future__ import annotations

import json
import sys
import tarfile

from agent.bench.records import SampleRecord
from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import acceptance as acc  # noqa: E402

SETTINGS = {
    "mode": "sample",
    "samples": 1,
    "per_problem": 1,
    "ks": [1],
    "policy": "strict",
    "precision": "fp32",
    "reference_numerics": "exact",
}
SIZES = {"level1": 76, "level2": 80, "level3": 36}


def _rec(name: str, *, status="ok", best=1.3, wall=60.0, code="c0de", limit="") -> SampleRecord:
    correct = status in ("ok", "slower")
    sp = (
        {"eager": best * 1.1, "compile": best, "best": best, "eager_cudnn_benchmark": best * 1.05}
        if correct
        else {}
    )
    return SampleRecord(
        problem=name,
        sample=0,
        source="compiler",
        status=status,
        correct=correct,
        compiled=True,
        speedups=sp,
        wall_s=wall,
        code=code,
        limit=limit,
        device="cuda",
    )


def _lane(level: str, n: int, settings=None, **kw) -> acc.Lane:
    s = {**SETTINGS, **(settings or {}), "problems_path": f"kb/{level}"}
    problems = [(f"{i}_p", [_rec(f"{i}_p", **kw)], None, None) for i in range(1, n + 1)]
    return acc.lane_of([(s, problems)])


def _by(rows, text):
    (row,) = [r for r in rows if text in r.criterion]
    return row


def test_the_recorded_level3_bench_fails_what_it_did_not_reach(tmp_path, capsys):
    archive = ROOT / "benchmarks/results/gpu/2026-12-02-s19/call2/bench_level3.tgz"
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    kb = tmp_path / "kb" / "level3"
    kb.mkdir(parents=True)
    for i in range(36):
        (kb / f"{i}.py").write_text("")
    rc = acc.main(
        [
            "--level3",
            str(tmp_path / "level3"),
            "--kernelbench",
            str(tmp_path / "kb"),
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert rc == 1
    rows = json.loads((tmp_path / "out" / "acceptance.json").read_text())["rows"]
    verdicts = next(r for r in rows if r["criterion"].startswith("every level-3 network reaches"))
    assert (verdicts["measured"], verdicts["result"]) == ("8 of 36", "FAIL")
    cheat = next(r for r in rows if "cheat" in r["criterion"])
    assert cheat["result"] == "PASS"
    geo = next(r for r in rows if r["criterion"].startswith("geomean"))
    assert geo["result"] == "FAIL" and geo["measured"].startswith("0.33")
    median = next(r for r in rows if r["criterion"].startswith("median time"))
    assert median["result"] == "FAIL"  # 28 networks without a verdict: the median is infinite
    assert "| 33 | every level-3 network reaches a verdict | 36 of 36 | 8 of 36 | **FAIL** |" in (
        capsys.readouterr().out
    )


def test_a_level3_bench_that_meets_the_targets_passes_and_a_cheat_fails_it():
    rows = acc.issue33(_lane("level3", 36), _lane("level1", 76), SIZES)
    for text in ("reaches a verdict", "correct all-Triton", "cheat", "geomean", "median time"):
        assert _by(rows, text).result == acc.PASS, text
    assert _by(rows, "levels 1 and 2 keep").result == acc.FAIL  # level 2 is missing
    s = {**SETTINGS, "problems_path": "kb/level3"}
    probs = [(f"{i}_p", [_rec(f"{i}_p")], None, None) for i in range(35)]
    probs.append(("35_p", [_rec("35_p", status="cheat")], None, None))
    rows = acc.issue33(acc.lane_of([(s, probs)]), _lane("level1", 76), SIZES)
    assert _by(rows, "cheat").result == acc.FAIL
    assert _by(rows, "correct all-Triton").measured == "35 of 36"


def test_level3_slow_networks_need_a_reason_and_time_counts_missing_networks():
    lane = _lane("level3", 36, best=0.5, wall=300.0)
    rows = acc.issue33(lane, acc.Lane({}, []), SIZES)
    assert _by(rows, "reason").result == acc.FAIL  # no limit recorded
    assert _by(rows, "median time").result == acc.FAIL
    rows = acc.issue33(_lane("level3", 36, best=0.5, limit="memory-bound"), acc.Lane({}, []), SIZES)
    assert _by(rows, "reason").result == acc.REVIEW
    # 18 of 36 networks recorded at 10 s: the other 18 count as longer than any
    rows = acc.issue33(_lane("level3", 18, wall=10.0), acc.Lane({}, []), SIZES)
    assert _by(rows, "median time").result == acc.FAIL
    rows = acc.issue33(_lane("level3", 19, wall=10.0), acc.Lane({}, []), SIZES)
    assert _by(rows, "median time").result == acc.PASS


def test_level3_not_under_the_strict_policy_fails():
    rows = acc.issue33(
        _lane("level3", 36, settings={"policy": "allow-library"}), acc.Lane({}, []), SIZES
    )
    assert _by(rows, "correct all-Triton").result == acc.FAIL


def test_issue35_needs_one_version_of_the_code_and_both_headlines():
    one = acc.lane_of(
        [
            (
                {**SETTINGS, "problems_path": "kb/level1"},
                [(f"{i}_p", [_rec(f"{i}_p")], None, None) for i in range(76)],
            ),
            (
                {**SETTINGS, "problems_path": "kb/level2"},
                [(f"{i}_q", [_rec(f"{i}_q")], None, None) for i in range(80)],
            ),
        ]
    )
    rows = acc.issue35(one, SIZES)
    assert [r.result for r in rows] == [acc.PASS] * 3
    assert "eager cudnn.benchmark: geomean 1.365x" in rows[2].measured
    two = acc.lane_of(
        [
            (
                {**SETTINGS, "problems_path": "kb/level1"},
                [(f"{i}_p", [_rec(f"{i}_p")], None, None) for i in range(76)],
            ),
            (
                {**SETTINGS, "problems_path": "kb/level2"},
                [(f"{i}_q", [_rec(f"{i}_q", code="beef")], None, None) for i in range(80)],
            ),
        ]
    )
    assert _by(acc.issue35(two, SIZES), "one run").result == acc.FAIL
    old = _lane("level1", 76, code="")
    assert _by(acc.issue35(old, SIZES), "one run").result == acc.FAIL


def _kernel(setting="fp32", ours=True, accepts=True, static=True):
    return {
        "setting": setting,
        "kernel": "k.py",
        "ours_correct": ours,
        "kb_accepts": accepts,
        "kb_static_valid": static,
        "kb_static_errors": [] if static else ["pass"],
    }


def test_issue36_bf16_share_and_precision_and_agreement():
    s = {**SETTINGS, "precision": "bf16"}
    lv1 = [(f"{i}_p", [_rec(f"{i}_p", best=1.3)], None, None) for i in range(76)]
    # 149 of 156 correct is 95.5%: passes; 148 is 94.9%: fails
    for wrong, expect in ((7, acc.PASS), (8, acc.FAIL)):
        lv2 = [
            (f"{i}_q", [_rec(f"{i}_q", status="mismatch" if i < wrong else "ok")], None, None)
            for i in range(80)
        ]
        bf16 = acc.lane_of(
            [({**s, "problems_path": "kb/level1"}, lv1), ({**s, "problems_path": "kb/level2"}, lv2)]
        )
        rows = acc.issue36(bf16, acc.Lane({}, []), [{"kernels": [_kernel()]}], SIZES)
        assert _by(rows, "correct all-Triton").result == expect
        assert _by(rows, "bf16, levels 1 and 2: every problem").result == acc.PASS
        assert _by(rows, "bf16 geomean").result == acc.PASS
        assert _by(rows, "judge accepts").result == acc.PASS
    fp32_named_bf16 = _lane("level1", 76)
    rows = acc.issue36(fp32_named_bf16, acc.Lane({}, []), [], SIZES)
    assert _by(rows, "run at bf16").result == acc.FAIL
    refused = [{"kernels": [_kernel(), _kernel("bf16", accepts=False)]}]
    assert _by(acc.issue36(bf16, acc.Lane({}, []), refused, SIZES), "judge accepts").result == (
        acc.FAIL
    )
    unanswered = [{"kernels": [_kernel(accepts=None)]}]
    assert (
        _by(acc.issue36(bf16, acc.Lane({}, []), unanswered, SIZES), "judge accepts").result
        == acc.FAIL
    )
    static = [{"kernels": [_kernel(ours=False, accepts=False, static=False)]}]
    rows = acc.issue36(bf16, acc.Lane({}, []), static, SIZES)
    assert _by(rows, "static checker").result == acc.FAIL


def test_bad_arguments_exit_2(tmp_path, capsys):
    assert acc.main(["--fp32", str(tmp_path)]) == 2
    assert "not a benchmark directory" in capsys.readouterr().err


def test_nothing_given_is_not_measured():
    rows = acc.issue33(acc.Lane({}, []), acc.Lane({}, []), SIZES) + acc.issue35(
        acc.Lane({}, []), SIZES
    )
    assert {r.result for r in rows} == {acc.MISSING}


def test_the_code_version_is_a_digest_of_the_packages_files(tmp_path, monkeypatch):
    from tools.core import code_version as cv

    for package in cv.PACKAGES:
        (tmp_path / package / "sub").mkdir(parents=True)
        (tmp_path / package / "sub" / "m.py").write_text("x = 1\n")
    (tmp_path / "agent" / "sub" / "notes.md").write_text("not code")
    monkeypatch.setattr(cv, "ROOT", tmp_path)
    first = cv.code_version.__wrapped__()
    assert first == cv.code_version.__wrapped__() and len(first) == 16
    (tmp_path / "agent" / "sub" / "notes.md").write_text("changed, still not code")
    assert cv.code_version.__wrapped__() == first
    (tmp_path / "tools" / "sub" / "m.py").write_text("x = 2\n")
    assert cv.code_version.__wrapped__() != first
    assert len(cv.code_version()) == 16  # this checkout's


def test_the_bench_report_names_one_code_version_and_notes_several():
    from agent.bench.report import compute_report, render_markdown

    s = {**SETTINGS, "temperature": 1.0, "top_p": 0.97, "protocol": "ours", "trials": 5}
    s |= {"tolerance_preset": "default", "backend": "compiler", "model": None}
    one = [(f"{i}_p", [_rec(f"{i}_p")], None, None) for i in range(3)]
    r = compute_report(s, one)
    assert r["totals"]["code_versions"] == {"c0de": 3}
    assert not any("versions of this project's code" in n for n in r["notes"])
    assert "code version c0de" in render_markdown(r)
    mixed = [*one, ("9_p", [_rec("9_p", code="beef")], None, None)]
    r = compute_report(s, mixed)
    assert r["totals"]["code_versions"] == {"c0de": 3, "beef": 1}
    assert any("2 versions of this project's code" in n for n in r["notes"])
    assert "code version" not in render_markdown(r).split("Note:")[0]


def test_an_unreadable_file_does_not_stop_the_code_version(tmp_path, monkeypatch):
    from tools.core import code_version as cv

    (tmp_path / "agent").mkdir()
    locked = tmp_path / "agent" / "m.py"
    locked.write_text("x = 1\n")
    monkeypatch.setattr(cv, "ROOT", tmp_path)
    readable = cv.code_version.__wrapped__()
    real = type(locked).read_bytes

    def refuse(self):
        if self.name == "m.py":
            raise PermissionError("denied")
        return real(self)

    monkeypatch.setattr(type(locked), "read_bytes", refuse)
    unreadable = cv.code_version.__wrapped__()
    assert len(unreadable) == 16 and unreadable != readable
