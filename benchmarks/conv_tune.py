"""Time this project's Triton convolutions (tools/kernels/triton_conv.py) against cuDNN on KernelBench
level-1 convolution problems, over a small sweep of tiles and tl.dot input precisions.

One problem a process (benchmarks/gpu_conv_tune.sh runs them under `timeout`, so a crash or a
hang costs one problem, not the run). For each convolution module of the problem's Model (its
input captured by a forward hook at the published sizes):

- cuDNN eager with PyTorch's default TF32 (what a user's eager runs) and with TF32 off;
- `triton_convolution` at the default tile (tools.compile.tune.CONV_TILES[0]) with each precision of
  `PRECISION_SWEEP` (tf32x3, bf16x3, tf32, tf32x3 with SPLIT_W, tf32x3 with PACK_W=False, ieee),
  then the tuner's other tiles (pruned by the group's output channels) at tf32x3, then the best
  tile at the fastest other precision that passed 1e-2;
- each checked against an fp64 convolution of the same inputs: max abs error, and whether every
  element is within atol + rtol * |ref| at 1e-4 (the verifier's fp32 default) and at 1e-2
  (KernelBench's own tolerance).

Rows are appended to `--out` (markdown) and `--jsonl`. No new config starts when the next one
would pass `--cap` seconds. `--device cpu` runs the plumbing under the Triton interpreter at tiny
sizes (no timings worth reading).

    python benchmarks/conv_tune.py --problem .kb/level1/67_conv_standard_1D.py --cap 20 \\
        --out conv_tune.md --jsonl conv_tune.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

HEADER = (
    "| problem | conv | kernel | tile (BM, BN, BK, warps, stages) | precision | ms | x eager TF32 "
    "| x eager fp32 | max abs err vs fp64 | ok 1e-4 | ok 1e-2 |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|\n"
)
SPATIAL = ("height", "width", "depth", "length")
PRECISION_SWEEP = (
    ("tf32x3", {}),
    ("bf16x3", {}),
    ("tf32", {}),
    ("tf32x3", {"SPLIT_W": True}),
    ("tf32x3", {"PACK_W": False}),
    ("ieee", {}),
)
"""(precision, other keywords) tried at the default tile, in this order."""


def load_problem(path: Path, shrink: bool) -> dict:
    """The problem module's namespace; with `shrink`, batch 1 and spatial sizes of at most 9."""
    scope: dict = {"__name__": "kb_problem"}
    text = path.read_text()
    exec(compile(text, str(path), "exec"), scope)
    if shrink:
        for name, value in list(scope.items()):
            if type(value) is not int:
                continue
            if name == "batch_size":
                scope[name] = 1
            elif any(s in name for s in SPATIAL):
                scope[name] = min(value, 9)
    return scope


def conv_calls(model, inputs) -> list[tuple[str, object, object]]:
    """(name, module, input) for each convolution module, inputs captured by a forward pass."""
    import torch

    convs = [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.modules.conv._ConvNd)
    ]
    seen: dict[str, object] = {}
    hooks = [
        m.register_forward_hook(lambda mod, args, out, name=name: seen.setdefault(name, args[0]))
        for name, m in convs
    ]
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    return [(name, m, seen[name]) for name, m in convs if name in seen]


def conv_args(m) -> dict:
    import torch

    transposed = isinstance(m, torch.nn.modules.conv._ConvTransposeNd)
    return dict(
        stride=m.stride,
        padding=m.padding,
        dilation=m.dilation,
        transposed=transposed,
        output_padding=m.output_padding if transposed else (0,) * len(m.stride),
        groups=m.groups,
    )


def check(got, ref) -> tuple[float, bool, bool]:
    """Max abs error against the fp64 reference, and all-close at 1e-4 and at 1e-2."""
    if got.shape != ref.shape:
        return float("nan"), False, False
    err = (got.double() - ref).abs_()
    bound = ref.abs()
    ok4 = bool((err <= 1e-4 + 1e-4 * bound).all())
    ok2 = bool((err <= 1e-2 + 1e-2 * bound).all())
    worst = err.max().item()
    return worst, ok4 and worst == worst, ok2 and worst == worst


def timer(device: str):
    if device == "cuda":
        from triton.testing import do_bench

        return lambda fn: do_bench(fn, warmup=5, rep=40)

    def once(fn):
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3

    return once


def tiles_for(c_out_g: int, direct: bool) -> list[tuple]:
    """The tuner's tiles worth trying for this convolution, the default first."""
    from tools.compile.tune import CONV_TILES

    if direct:  # the direct kernel reads BLOCK_M (positions a program) and num_warps
        return [(1024, 0, 0, 4, 0), (512, 0, 0, 4, 0), (2048, 0, 0, 8, 0), (256, 0, 0, 4, 0)]
    width = max(16, 1 << (c_out_g - 1).bit_length())
    kept = [t for t in CONV_TILES if t[1] <= 2 * width and t[0] <= 256]
    return kept or list(CONV_TILES[:1])


def run(args) -> int:
    import torch

    device = args.device
    path = Path(args.problem)
    name = path.stem
    start = time.monotonic()
    out = open(args.out, "a")
    jsonl = open(args.jsonl, "a") if args.jsonl else None

    def emit(row: dict) -> None:
        cells = [
            name[:48],
            row["conv"],
            row.get("kernel", ""),
            str(row.get("tile", "")),
            row.get("precision", ""),
            f"{row['ms']:.3f}" if row.get("ms") is not None else "",
            f"{row['x_eager_tf32']:.2f}" if row.get("x_eager_tf32") else "",
            f"{row['x_eager_fp32']:.2f}" if row.get("x_eager_fp32") else "",
            f"{row['max_err']:.2e}" if row.get("max_err") is not None else "",
            {True: "yes", False: "NO"}.get(row.get("ok_1e-4"), ""),
            {True: "yes", False: "NO"}.get(row.get("ok_1e-2"), ""),
        ]
        if row.get("error"):
            cells[4] = (cells[4] + " " + row["error"]).strip()
        out.write("| " + " | ".join(c.replace("|", "/") for c in cells) + " |\n")
        out.flush()
        if jsonl:
            jsonl.write(json.dumps({"problem": name, **row}) + "\n")
            jsonl.flush()

    scope = load_problem(path, shrink=device == "cpu")
    torch.manual_seed(0)
    # made on the device: KernelBench's inputs reach gigabytes, slow to draw on the CPU
    with torch.device(device):
        model = scope["Model"](*scope["get_init_inputs"]())
        inputs = [t.to(device) if isinstance(t, torch.Tensor) else t for t in scope["get_inputs"]()]
    bench = timer(device)
    for conv_name, m, x in conv_calls(model, inputs):
        tune_conv(conv_name, m, x, emit, bench, deadline=start + args.cap)
        if device == "cuda":
            torch.cuda.empty_cache()
    return 0


def tune_conv(conv_name, m, x, emit, bench, deadline: float) -> None:
    """cuDNN (TF32 on, off) and the Triton sweep for one convolution module, rows to `emit`."""
    import torch

    from tools.kernels.triton_conv import DIRECT_MAX_COUT_G, triton_convolution

    kw = conv_args(m)
    w, b = m.weight.detach(), None if m.bias is None else m.bias.detach()
    c_out_g = w.shape[1] if kw["transposed"] else w.shape[0] // kw["groups"]
    direct = c_out_g < DIRECT_MAX_COUT_G
    c_in_g = x.shape[1] // kw["groups"]
    if direct:
        path_name = "direct"
    else:
        path_name = "gemm-taps" if c_in_g >= 16 else "gemm-flat"
        if kw["transposed"] and c_in_g >= 16 and max(m.stride) > 1:
            path_name += "-phased"
    pos = [kw[k] for k in ("stride", "padding", "dilation", "transposed", "output_padding")]
    pos.append(kw["groups"])
    with torch.no_grad():
        ref = torch.convolution(x.double(), w.double(), None if b is None else b.double(), *pos)

    def eager_conv():
        return torch.convolution(x, w, b, *pos)

    eager = {}
    for tf32 in (True, False):
        torch.backends.cudnn.allow_tf32 = tf32
        label = "cuDNN TF32" if tf32 else "cuDNN fp32"
        try:
            with torch.no_grad():
                err, ok4, ok2 = check(eager_conv(), ref)
                ms = bench(eager_conv)
            eager[tf32] = ms
            emit(dict(conv=conv_name, kernel=label, ms=ms, max_err=err,
                      **{"ok_1e-4": ok4, "ok_1e-2": ok2}))  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - a row, not a stop
            emit(dict(conv=conv_name, kernel=label, error=_short(exc)))
    torch.backends.cudnn.allow_tf32 = True

    results: list[dict] = []
    longest = 0.0

    def attempt(tile, precision, **extra):
        nonlocal longest
        if time.monotonic() + 1.5 * longest > deadline:
            return
        t0 = time.monotonic()
        bm, bn, bk, warps, stages = tile
        knobs = dict(BLOCK_M=bm, num_warps=warps)
        if not direct:  # the direct kernel multiplies in fp32 FMA, whatever the precision
            knobs.update(BLOCK_N=bn, BLOCK_K=bk, num_stages=stages, precision=precision)
            knobs.update(extra)
        label = _label(precision, extra)
        row = dict(conv=conv_name, kernel=path_name, tile=tile, precision=label)

        def fn():
            return triton_convolution(x, w, b, *pos, **knobs)

        try:
            with torch.no_grad():
                err, ok4, ok2 = check(fn(), ref)
                ms = bench(fn)
            row.update(ms=ms, max_err=err, **{"ok_1e-4": ok4, "ok_1e-2": ok2})
            row["x_eager_tf32"] = eager.get(True, 0) / ms if ms else None
            row["x_eager_fp32"] = eager.get(False, 0) / ms if ms else None
            results.append(row)
        except Exception as exc:  # noqa: BLE001 - a row, not a stop
            row["error"] = _short(exc)
        emit(row)
        longest = max(longest, time.monotonic() - t0)

    # The default tile at every precision first (the cap may cut the sweep), then the other
    # tiles at tf32x3, then the best tile at the fastest other precision that passed 1e-2.
    tiles = tiles_for(c_out_g, direct)
    if direct:
        for tile in tiles:
            attempt(tile, "fma")
    else:
        for precision, extra in PRECISION_SWEEP:
            attempt(tiles[0], precision, **extra)
        for tile in tiles[1:]:
            attempt(tile, "tf32x3")
        timed = [r for r in results if r.get("ms") and r["precision"] == "tf32x3"]
        best = min(timed, key=lambda r: r["ms"])["tile"] if timed else tiles[0]
        others = [r for r in results if r.get("ok_1e-2") and r["precision"] != "tf32x3"]
        if best != tiles[0] and others:
            fastest = min(others, key=lambda r: r["ms"])["precision"]
            name, extra = {_label(p, e): (p, e) for p, e in PRECISION_SWEEP}[fastest]
            attempt(best, name, **extra)
    for tol in ("1e-4", "1e-2"):
        ok = [r for r in results if r.get(f"ok_{tol}") and r.get("ms")]
        label = f"**best at {tol}**"
        if not ok:
            emit(dict(conv=conv_name, kernel=label, error="none passed"))
            continue
        r = min(ok, key=lambda r: r["ms"])
        keep = ("tile", "precision", "ms", "max_err", "x_eager_tf32", "x_eager_fp32")
        keep += ("ok_1e-4", "ok_1e-2")
        emit(dict(conv=conv_name, kernel=label, **{k: r[k] for k in keep}))


def _label(precision: str, extra: dict) -> str:
    return " ".join([precision] + [f"{k}={v}" for k, v in extra.items()])


def _short(exc: BaseException) -> str:
    return re.sub(r"\s+", " ", f"{type(exc).__name__}: {exc}")[:160]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", default="", help="a KernelBench problem file")
    p.add_argument("--cap", type=float, default=20.0, help="seconds for this problem")
    p.add_argument("--out", required=True, help="markdown table to append rows to")
    p.add_argument("--jsonl", default="", help="JSON lines file to append rows to")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--header", action="store_true", help="only write the table header")
    args = p.parse_args(argv)
    if args.header:
        with open(args.out, "a") as f:
            f.write(HEADER)
        return 0
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before tools.kernels.triton_conv defines its kernels
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
