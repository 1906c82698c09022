"""KernelBench's own judge re-evaluates a run we exported (issue 38, item 1, on a GPU).

1. `agent bench --kernelbench KB --level L --problems IDS --backend compiler
   --export-kernelbench WORK/runs/roundtrip` (our verdicts in triton_agent_eval_results.json);
2. KernelBench's `scripts/eval_from_generations.py` `main`, unchanged, on that run directory
   (pydra and modal stubbed: it imports them at load time; its pool forks, so the stubs reach
   its workers), which writes its own eval_results.json beside ours;
3. per sample, our verdict against KernelBench's.

    cp -r ../shared/kernelbench .kb/kb && cp -r ../shared/kernelbench-eval .kb/kernelbench-eval
    run(command="bash -c 'source benchmarks/_gpu_env.sh && python3 benchmarks/kernelbench_roundtrip.py'",
        carry=[".whl", ".kb"], kind="nvidia-h200", timeout_s=600)

Options: --kb DIR [.kb/kb] --kb-eval DIR [.kb/kernelbench-eval] --level [1] --problems [20,21,22]
--work DIR [/tmp/kb-roundtrip] --out DIR [$OUT]; --precision fp32|bf16|fp16 [fp32] (issue 36:
`agent bench --precision` and KernelBench's EvalConfig.precision alike); --dry-run stops before KernelBench's judge
(a CPU check: the export and what KernelBench would choose to evaluate). Writes
$OUT/kernelbench_roundtrip.json and prints it; exit 0 when KernelBench evaluated every
exported sample (agreement is reported, not required: its reference runs cuDNN in TF32).
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing as mp
import os
import subprocess
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS_NAME = "triton_agent_eval_results.json"  # agent.kernelbench_io.RESULTS_NAME


def install_stubs(kb_eval: Path) -> None:
    """What KernelBench's script imports at load time and does not use here, stubbed: pydra's
    config, modal's cloud, kernelbench.compile's build cache. Called in this process and, through
    the `eval_from_generations` shim, in every worker KernelBench's pool spawns."""
    for p in (str(kb_eval / "stubs"), str(kb_eval)):
        if p not in sys.path:
            sys.path.insert(0, p)
    pydra = types.ModuleType("pydra")

    class Config:
        def to_dict(self) -> dict:
            return dict(self.__dict__)

    pydra.Config, pydra.REQUIRED = Config, None
    pydra.main = lambda base: lambda f: f
    sys.modules["pydra"] = pydra

    class Anything:
        def __init__(self, *a, **k) -> None: ...

        def __call__(self, *a, **k):
            return a[0] if len(a) == 1 and isinstance(a[0], type) else Anything()

        def __getattr__(self, name: str):
            return Anything()

    modal = types.ModuleType("modal")
    modal.App = modal.Image = modal.Retries = modal.method = Anything()
    sys.modules["modal"] = modal
    sys.modules["kernelbench.compile"] = types.ModuleType("kernelbench.compile")


SHIM = """# written by benchmarks/kernelbench_roundtrip.py: KernelBench's script with its stubs, importable
# by name in the workers its pool spawns (they unpickle eval_from_generations.<function>)
import os, sys
sys.path.insert(0, {root!r})
from benchmarks.kernelbench_roundtrip import install_stubs
from pathlib import Path
install_stubs(Path({kb_eval!r}))
__file__ = {script!r}
exec(compile(open(__file__).read(), __file__, "exec"))
"""


def load_eval_from_generations(kb_eval: Path, work: Path) -> types.ModuleType:
    """KernelBench's script as a module named `eval_from_generations`, through a shim in
    `work/shim` that installs the stubs first. Its pool starts workers with spawn, as it does
    by itself (a fork would copy this process's CUDA context: "Cannot re-initialize CUDA in
    forked subprocess", H200, session 16); they import the shim from sys.path, which spawn
    passes on."""
    kb_eval = kb_eval.resolve()
    shim = work.resolve() / "shim"
    shim.mkdir(parents=True, exist_ok=True)
    script = kb_eval / "scripts" / "eval_from_generations.py"
    (shim / "eval_from_generations.py").write_text(
        SHIM.format(root=str(ROOT), kb_eval=str(kb_eval), script=str(script))
    )
    sys.path.insert(0, str(shim))
    install_stubs(kb_eval)
    import eval_from_generations

    return eval_from_generations


def level_root(kb: Path, level: int) -> Path:
    """The folder that holds level<L>/ (KernelBench's dataset reads base_path/level<L>)."""
    for cand in (kb, kb / "KernelBench"):
        if (cand / f"level{level}").is_dir():
            return cand
    raise SystemExit(f"no level{level} under {kb}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kb", default=str(ROOT / ".kb" / "kb"))
    ap.add_argument("--kb-eval", default=str(ROOT / ".kb" / "kernelbench-eval"))
    ap.add_argument("--level", type=int, default=1)
    ap.add_argument("--problems", default="20,21,22")
    ap.add_argument("--work", default="/tmp/kb-roundtrip")
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/gpu-out")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--bench-args", default="", help="more arguments for `agent bench`")
    ap.add_argument(
        "--precision",
        default="fp32",
        choices=("fp32", "bf16", "fp16"),
        help="the dtype both judges run the problems at (KernelBench's meaning)",
    )
    args = ap.parse_args()
    kb, work, out = Path(args.kb), Path(args.work), Path(args.out)
    runs, run_name = work / "runs", "roundtrip"
    run_dir = runs / run_name
    out.mkdir(parents=True, exist_ok=True)

    bench = [sys.executable, "-m", "agent", "bench", "--kernelbench", str(kb),
             "--level", str(args.level), "--problems", args.problems, "--backend", "compiler",
             "--out", str(work / "bench"), "--export-kernelbench", str(run_dir), "--json"]  # fmt: skip
    bench += ["--precision", args.precision, *args.bench_args.split()]
    # written as it goes, so a run cut short by the device's limit still says where it was
    with open(out / "roundtrip_bench_stderr.txt", "w") as err:
        done = subprocess.run(bench, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, text=True)
    print(f"bench exit {done.returncode}", flush=True)
    if not (run_dir / RESULTS_NAME).is_file():
        raise SystemExit(
            f"agent bench (exit {done.returncode}) exported nothing to {run_dir}: see "
            f"{out / 'roundtrip_bench_stderr.txt'}"
        )
    ours = json.loads((run_dir / RESULTS_NAME).read_text())
    exported = sorted(p.name for p in run_dir.glob("level_*_kernel.py"))

    m = load_eval_from_generations(Path(args.kb_eval), work)
    m.construct_kernelbench_dataset = functools.partial(
        m.construct_kernelbench_dataset, base_path=str(level_root(kb, args.level))
    )
    ids = [int(k) for k in ours]
    config = m.EvalConfig()
    config.__dict__.update(
        run_name=run_name, dataset_src="local", level=args.level, runs_dir=str(runs),
        subset=(min(ids), max(ids)), backend="triton", gpu_arch=["Hopper"], timeout=300,
        kernel_eval_build_dir=str(work / "cache"), num_samples_per_problem=1,
        precision=args.precision,
    )  # fmt: skip
    dataset = m.construct_kernelbench_dataset(level=args.level, source="local")
    chosen = [
        p for p in dataset.get_problem_ids()
        if min(ids) <= p <= max(ids)
        and not m.check_if_eval_exists_local(p, 0, str(run_dir / "eval_results.json"))
    ]  # fmt: skip
    result: dict = {"bench_exit": done.returncode, "exported": exported, "chosen": chosen,
                    "precision": args.precision}  # fmt: skip
    if not args.dry_run:
        mp.set_start_method("spawn")  # what its own main() sets (and a fork breaks CUDA)
        m.main(config)
        theirs = json.loads((run_dir / "eval_results.json").read_text())
        rows = []
        for pid, entries in ours.items():
            kb_entries = {e["sample_id"]: e for e in theirs.get(pid, [])}
            for e in entries:
                k = kb_entries.get(e["sample_id"], {})
                rows.append({
                    "problem": int(pid), "sample": e["sample_id"],
                    "ours": e["correctness"], "kernelbench": k.get("correctness"),
                    "kernelbench_runtime_ms": k.get("runtime"),
                    "kernelbench_metadata": {a: str(b)[:200] for a, b in (k.get("metadata") or {}).items()},
                })  # fmt: skip
        result["samples"] = rows
        result["evaluated_by_kernelbench"] = sum(1 for r in rows if r["kernelbench"] is not None)
    text = json.dumps(result, indent=1)
    (out / "kernelbench_roundtrip.json").write_text(text + "\n")
    print(text)
    wanted = {int(n.split("_")[3]) for n in exported}
    if args.dry_run:
        return 0 if wanted <= set(chosen) else 1
    return 0 if result["evaluated_by_kernelbench"] >= len(exported) else 1


if __name__ == "__main__":
    sys.exit(main())
