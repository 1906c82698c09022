"""The KernelBench round trip (issue 38, item 1): what `bench --export-kernelbench RUN_DIR` writes
is what KernelBench's own `scripts/eval_from_generations.py` picks up and evaluates.

KernelBench's code (../shared/kernelbench-eval: its `kernelbench/` package and the script,
unchanged) runs in a subprocess: importing `kernelbench` patches `torch.randn`, and the script
imports pydra and modal at load time, which are stubbed there. The subprocess does what the
script's `main` does up to choosing its work (the dataset of the level, then every
`(problem, sample)` that `check_if_eval_exists_local` does not find), reads each kernel with
`fetch_kernel_from_disk`, and writes a timeout with `add_to_eval_results_file` exactly as its
`batch_eval` does, for our entry to be compared with."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent import kernelbench_io as kb
from tests.helpers import EX

ROOT = Path(__file__).resolve().parent.parent
KB_EVAL = Path(
    os.environ.get("KERNELBENCH_EVAL_DIR") or ROOT.parent / "shared" / "kernelbench-eval"
)

needs_kb = pytest.mark.skipif(
    not (KB_EVAL / "scripts" / "eval_from_generations.py").is_file(),
    reason=f"KernelBench's evaluation code not at {KB_EVAL} (set KERNELBENCH_EVAL_DIR)",
)

_KB_SIDE = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    sys.path.append(sys.argv[7])  # this project, last: nothing of KernelBench's is shadowed
    from benchmarks.kernelbench_roundtrip import load_eval_from_generations
    kb_eval, kb_root, run_dir, level, samples, scratch = sys.argv[1:7]
    level, samples = int(level), int(samples)
    # KernelBench's script with pydra, modal and kernelbench.compile stubbed, as the GPU round
    # trip loads it (benchmarks/kernelbench_roundtrip.py)
    m = load_eval_from_generations(Path(kb_eval), Path(scratch))

    # main(): the dataset, then every sample not yet in eval_results.json
    dataset = m.construct_kernelbench_dataset(level=level, source="local", base_path=kb_root)
    eval_file_path = run_dir + "/eval_results.json"
    total_work = []
    for problem_id in dataset.get_problem_ids():
        for sample_id in range(samples):
            if not m.check_if_eval_exists_local(problem_id, sample_id, eval_file_path):
                total_work.append((problem_id, sample_id))
    kernels = {
        f"{p}/{s}": m.fetch_kernel_from_disk(run_dir, level, p, s) for p, s in total_work}
    refs = {p: bool(m.fetch_ref_arch_from_problem_id(dataset, p)) for p, _ in total_work}

    # batch_eval's record of a timeout
    timeout = m.KernelExecResult(compiled=False, correctness=False,
        metadata={"error": "Evaluation timed out"}, runtime=-1.0, runtime_stats={})
    m.add_to_eval_results_file(19, 1, timeout, scratch + "/eval_results.json")
    written = json.load(open(scratch + "/eval_results.json"))
    print(json.dumps({"work": total_work, "kernels": kernels, "refs": refs,
                      "timeout_entry": written["19"][0]}))
    """
)


def _kernelbench_side(kb_root: Path, run_dir: Path, scratch: Path, samples: int) -> dict:
    scratch.mkdir(parents=True, exist_ok=True)
    script = scratch / "kb_side.py"
    script.write_text(_KB_SIDE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(script), str(KB_EVAL), str(kb_root), str(run_dir), "1",
         str(samples), str(scratch), str(ROOT)],
        capture_output=True, text=True, env=env, cwd=scratch, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _sample(out: Path, problem: str, n: int, *, status: str, kernel: str | None, **verdict):
    sd = out / problem / f"{n:02d}"
    sd.mkdir(parents=True)
    if kernel is not None:
        (sd / "kernel.py").write_text(kernel)
    correct = status == "ok"
    compiled = status not in ("syntax_error", "compile_error")
    record = {"status": status, "correct": correct, "compiled": compiled, "device": "cpu"}
    (sd / "sample.json").write_text(json.dumps(record))
    (sd / "verdict.json").write_text(json.dumps({"status": status, "trials": 5, **verdict}))


@pytest.fixture
def bench_and_kb(tmp_path: Path) -> tuple[Path, Path]:
    """A bench directory of two KernelBench problems, two samples each (one a timeout, one
    a NameError), and the miniature KernelBench checkout they came from."""
    kb_root = tmp_path / "KernelBench"
    lvl = kb_root / "level1"
    lvl.mkdir(parents=True)
    shutil.copy(EX / "problems" / "relu.py", lvl / "19_ReLU.py")
    shutil.copy(EX / "problems" / "softmax.py", lvl / "23_Softmax.py")
    out = tmp_path / "bench"
    out.mkdir()
    (out / "bench.json").write_text(
        json.dumps({"problems_path": str(lvl), "problems": ["19_ReLU", "23_Softmax"]})
    )
    relu = (EX / "kernels" / "relu.py").read_text()
    _sample(out, "19_ReLU", 0, status="ok", kernel=relu, message="")
    _sample(out, "19_ReLU", 1, status="timeout", kernel=relu, message="ran past 60 s")
    _sample(out, "23_Softmax", 0, status="ok", kernel=relu, message="")
    _sample(
        out, "23_Softmax", 1, status="runtime_error", kernel="x = y\n",
        message="NameError: name 'y' is not defined",
        evidence={"error": {"kind": "NameError", "message": "name 'y' is not defined"}},
    )  # fmt: skip
    return out, kb_root


@needs_kb
def test_kernelbench_evaluates_every_exported_sample(bench_and_kb, tmp_path: Path):
    out, kb_root = bench_and_kb
    run_dir = tmp_path / "runs" / "r1"
    # what an earlier export left: KernelBench would skip every problem it lists
    run_dir.mkdir(parents=True)
    stale = {"19": [{"sample_id": 0, "metadata": {"triton_agent_status": "ok"}}]}
    (run_dir / "eval_results.json").write_text(json.dumps(stale))
    done = kb.export_run(out, run_dir)
    assert (done.kernels, done.problems) == (4, 2)

    seen = _kernelbench_side(kb_root, run_dir, tmp_path / "kb", samples=2)
    assert sorted(map(tuple, seen["work"])) == [(19, 0), (19, 1), (23, 0), (23, 1)]
    for key, text in seen["kernels"].items():
        p, s = map(int, key.split("/"))
        assert text == (run_dir / kb.kernel_name(1, p, s)).read_text() and text
    assert all(seen["refs"].values())

    # our verdicts beside them, in KernelBench's format; a timeout as KernelBench writes one
    ours = json.loads((run_dir / kb.RESULTS_NAME).read_text())
    timeout = ours["19"][1]
    theirs = seen["timeout_entry"]
    assert {k: v for k, v in timeout.items() if k != "metadata"} == {
        k: v for k, v in theirs.items() if k not in ("metadata", "sample_id")
    } | {"sample_id": 1}
    assert {k: timeout["metadata"].get(k) for k in theirs["metadata"]} == theirs["metadata"]
    assert timeout["metadata"]["triton_agent_status"] == "timeout"
    assert "runtime_error" not in timeout["metadata"]


def test_export_metadata_names_and_modes(bench_and_kb, tmp_path: Path):
    """`*_name` beside every failure key, as eval_kernel_against_ref writes them; exported
    files readable by others (0644); a KernelBench-written eval_results.json kept."""
    out, _ = bench_and_kb
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    theirs = {"19": [{"sample_id": 0, "compiled": True, "metadata": {"hardware": "H200"}}]}
    (run_dir / "eval_results.json").write_text(json.dumps(theirs))
    kb.export_run(out, run_dir)
    assert json.loads((run_dir / "eval_results.json").read_text()) == theirs

    ours = json.loads((run_dir / kb.RESULTS_NAME).read_text())
    name_error = ours["23"][1]["metadata"]
    assert name_error["runtime_error"].startswith("NameError")
    assert name_error["runtime_error_name"] == "builtins.NameError"
    mismatch = kb.eval_entry(0, {"status": "mismatch"}, {"message": "wrong"}, {})["metadata"]
    assert mismatch["correctness_issue_name"] == "correctness_issue"
    syntax = kb.eval_entry(0, {"status": "syntax_error"}, {"message": "bad"}, {})["metadata"]
    assert syntax["compilation_error_name"] == "SyntaxError"
    nocode = kb.eval_entry(0, {"status": "bad_input"}, {}, {}, has_kernel=False)["metadata"]
    assert nocode["other_error_name"]

    for f in run_dir.iterdir():
        if f.name != "eval_results.json":
            assert stat.S_IMODE(f.stat().st_mode) == 0o644, f.name


_SPAWNED = textwrap.dedent(
    """
    import multiprocessing as mp, sys
    from pathlib import Path
    from benchmarks.kernelbench_roundtrip import load_eval_from_generations
    m = load_eval_from_generations(Path(sys.argv[1]), Path(sys.argv[2]))
    with mp.get_context("spawn").Pool(1) as pool:
        print("spawned:", pool.apply(m.check_if_eval_exists_local, (1, 0, sys.argv[2] + "/none.json")))
    """
)


@needs_kb
def test_the_round_trip_s_workers_are_spawned_and_find_kernelbench_s_script(tmp_path):
    """KernelBench's pool spawns its workers (a fork copies a CUDA context: "Cannot re-initialize
    CUDA in forked subprocess" on the H200, session 16); each worker unpickles a function of
    `eval_from_generations`, which must import there with its stubs."""
    r = subprocess.run(
        [sys.executable, "-c", _SPAWNED, str(KB_EVAL), str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "spawned: False" in r.stdout, r.stdout + r.stderr[-2000:]
