"""Where a level-3 network's draft time goes on the CPU, against its depth (issue 33).

    python benchmarks/level3_draft_time.py --kb ../shared/kernelbench/level3 \
        --out benchmarks/results/cpu/level3_draft_time.jsonl

Each network is a reduced copy of the KernelBench file (`reduced_source`: batch 2 and 32x32
images where the network allows it; depth scaled through its own list of blocks where it has
one: ResNet101's `layers`, DenseNet121's `block_layers`), drafted by the compiler drafter on
the CPU in a fresh process (`draft_candidate`, dynamic, as a draft job does), under a time limit.
One JSON row per draft: wall and CPU seconds, the draft's own phase note (reference forward,
Inductor, rewriting), the candidate's size (kernels, kernel launches, convolution calls),
and what the GPU flow's draft-time
modules would compile (`module_loads`): each draft-time picker loads the draft as a module of
its own (convolution picks, GEMM tiles, every launch-config variant, the epilogue check, the
sized path), and each module's `@triton.jit` kernels compile (or load from Triton's disk
cache) on their first launch; counted with `tools.draft.launch_configs`'s kernel sharing off
and on.

Two more modes: `--steps FILE` times the drafter's own steps in one CPU draft of FILE (a reduced
copy the main mode wrote under $TMPDIR/level3_draft_time/); `--copy-keywords N ...` times the
sized path's copy of the convolution picks on synthetic host code of N convolutions.

The CPU path runs none of the GPU phases (convolution picks, launch configs, the sized path):
their counts are what this shows of them; `benchmarks/gpu_level3_time.sh` times them on an H200.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NETWORKS: dict[str, dict[str, object]] = {
    "10_ResNet101": {"depth_re": r"^layers = \[3, 4, 23, 3\]$", "depths": {
        "x1": "layers = [1, 1, 1, 1]", "x2": "layers = [2, 2, 2, 2]",
        "x4": "layers = [4, 4, 4, 4]"}},
    "15_DenseNet121": {"depth_re": r"block_layers = \[6, 12, 24, 16\]", "depths": {
        "x1": "block_layers = [2, 2, 2, 2]", "x2": "block_layers = [4, 4, 4, 4]",
        "x4": "block_layers = [8, 8, 8, 8]"}},
    "12_VGG19": {"image": 224, "batch": 1},
    "20_MobileNetV2": {},
    "22_EfficientNetB0": {},
    "7_GoogleNetInceptionV1": {"image": 64},
}  # fmt: skip
"""Network -> how to reduce it: `image` (default 32; VGG19's classifier needs 7x7 after five
pools, GoogLeNet's 64 keeps its last pool's input non-empty), `batch` (default 2: a BatchNorm
at 1x1 needs two values a channel in training mode), `depth_re` and `depths` (label -> the
replacement of that line; None: as published)."""


def reduced_source(text: str, spec: dict, depth: str | None) -> str:
    """The network's file at CPU sizes (module-level batch and image sizes) and `depth`."""
    image = int(spec.get("image", 32))
    batch = int(spec.get("batch", 2))
    text = re.sub(r"^batch_size = \d+", f"batch_size = {batch}", text, flags=re.M)
    text = re.sub(r"^(height|width) = 224$", rf"\1 = {image}", text, flags=re.M)
    text = text.replace("height, width = 224, 224", f"height, width = {image}, {image}")
    text = text.replace("3, 224, 224)", f"3, {image}, {image})")
    if depth is not None:
        new = spec["depths"][depth]  # type: ignore[index]
        if new is not None:
            text, n = re.subn(spec["depth_re"], new, text, flags=re.M)  # type: ignore[arg-type]
            if n != 1:
                raise SystemExit(f"depth line not found ({spec['depth_re']})")
    return text


CHILD = r"""
import json, re, sys, time
t0, c0 = time.monotonic(), time.process_time()
from tools.draft import draft_candidate
from tools.compile.tune import conv_sites
source = open(sys.argv[1]).read()
r = draft_candidate(source, device="cpu")
wall, cpu = time.monotonic() - t0, time.process_time() - c0
calls = list(conv_sites(r.source).values())
row = {
    "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "dynamic": r.dynamic,
    "phases": next((n for n in r.notes if " draft took " in n), ""),
    "kernels": len(r.kernels),
    "launches": len(re.findall(r"^\s+triton_\w+\[", r.source, flags=re.M)),
    "conv_calls": len(calls),
}
from benchmarks.level3_draft_time import module_loads
row["module_loads"] = module_loads(r.source)
print("ROW " + json.dumps(row))
"""


def module_loads(source: str, variants: int = 12) -> dict[str, int]:
    """The draft-time modules of the GPU flow for this draft (convolution picks, GEMM tiles,
    the launch configs' draft and `variants` variants, the epilogue check, the sized path's
    probe and module) loaded with `@triton.jit` real (no interpreter), kernel sharing off then
    on: how many kernel objects they hold, each a compile or a disk-cache load on its first
    launch on a GPU."""
    import tempfile

    os.environ.pop("TRITON_INTERPRET", None)
    from tools.draft import launch_configs

    out = {}
    for share in (False, True):
        launch_configs.SHARE_KERNELS = share
        launch_configs.clear_shared_kernels()
        seen: set[int] = set()
        total = 0
        with tempfile.TemporaryDirectory() as workdir:
            for i in range(variants + 6):
                module = launch_configs.load_module(
                    source, workdir, f"flow_{share}_{i}", share=True
                )
                objs = [v for v in vars(module).values() if launch_configs.is_kernel(v)]
                total += len(objs)
                seen.update(id(v) for v in objs)
        out["shared" if share else "unshared"] = len(seen)
        out["per_module"] = total // (variants + 6)
    return out


def host_code(n: int, keywords: str) -> str:
    """Synthetic host code of a network of `n` convolutions, each followed by a pointwise
    launch and the frees Inductor writes between them."""
    lines = ["import torch", "", "def call(args):", "    buf0 = args[0]"]
    for i in range(n):
        lines.append(
            f"    buf{i + 1} = triton_convolution(buf{i}, w{i}, None, stride=(1, 1), "
            "padding=(1, 1), dilation=(1, 1), transposed=False, output_padding=(0, 0), "
            f"groups=1{keywords})"
        )
        lines.append(f"    triton_poi_fused_relu_{i}[grid(16)](buf{i + 1}, 16, XBLOCK=16)")
        lines += [f"    del buf{i}"] * 8
    return "\n".join(lines + [f"    return (buf{n},)"]) + "\n"


def copy_keywords_time(counts: list[int]) -> None:
    """CPU seconds of `sized.copy_conv_keywords` (the sized path's static draft given the
    dynamic draft's convolution picks) on host code of each count of convolutions."""
    from tools.draft import sized

    for n in counts:
        picked, target = host_code(n, ", precision='bf16x3', X_SPLIT=True"), host_code(n, "")
        start = time.process_time()
        out = sized.copy_conv_keywords(picked, target)
        assert out.count("X_SPLIT=True") == n
        print(f"copy_conv_keywords, {n} convolutions: {time.process_time() - start:.2f} CPU s")


STEPS = (
    "_reference_and_capture",
    "_rewritten_kernels",
    "_call_args",
    "rewrite_host",
    "_kernel_libraries",
    "describe_sizes",
    "_outputs_and_state",
    "model_new_source",
    "_assembled",
)
"""The steps of `tools.draft.steps.one_draft` timed by `--steps` (the first is Inductor's capture)."""


def draft_steps(path: str) -> dict:
    """CPU seconds of each of the drafter's steps (`STEPS`) in one CPU draft of `path`."""
    import tools.draft.job as job
    import tools.draft.steps as steps

    spent: dict[str, float] = {}

    def timed(name: str, real):
        def run(*args, **kwargs):
            start = time.process_time()
            try:
                return real(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - start

        return run

    for name in STEPS:
        setattr(steps, name, timed(name, getattr(steps, name)))
    start = time.process_time()
    result = job.draft_candidate(Path(path).read_text(), device="cpu")
    spent["total"] = time.process_time() - start
    return {
        "file": Path(path).name,
        "kernels": len(result.kernels),
        **{k: round(v, 2) for k, v in spent.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kb", default=str(ROOT.parent / "shared/kernelbench/level3"))
    parser.add_argument("--out")
    parser.add_argument("--only", nargs="*", help="network[:depth] labels")
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument(
        "--copy-keywords", nargs="*", type=int, help="only time copy_conv_keywords at these counts"
    )
    parser.add_argument("--steps", help="only time the drafter's steps in a draft of this file")
    args = parser.parse_args()
    if args.steps:
        print(json.dumps(draft_steps(args.steps)))
        return 0
    if args.copy_keywords:
        copy_keywords_time(args.copy_keywords)
        return 0
    work = Path(os.environ.get("TMPDIR", "/tmp")) / "level3_draft_time"
    work.mkdir(parents=True, exist_ok=True)
    for net, spec in NETWORKS.items():
        depths = list(spec.get("depths", {None: None}))  # type: ignore[arg-type]
        for depth in depths:
            label = net if depth is None else f"{net}:{depth}"
            if args.only and label not in args.only and net not in args.only:
                continue
            text = (Path(args.kb) / f"{net}.py").read_text()
            path = work / f"{net}_{depth or 'published'}.py"
            path.write_text(reduced_source(text, spec, depth))
            start = time.monotonic()
            try:
                proc = subprocess.run(
                    [sys.executable, "-c", CHILD, str(path)], cwd=ROOT, capture_output=True,
                    text=True, timeout=args.timeout,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                )  # fmt: skip
                line = next((x for x in proc.stdout.splitlines() if x.startswith("ROW ")), None)
                row = json.loads(line[4:]) if line else {"error": proc.stderr[-600:]}
            except subprocess.TimeoutExpired:
                row = {"error": f"timeout after {args.timeout} s"}
            row = {"network": net, "depth": depth or "published", **row}
            row["process_s"] = round(time.monotonic() - start, 1)
            print(json.dumps(row), flush=True)
            with open(args.out, "a") as f:
                f.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
