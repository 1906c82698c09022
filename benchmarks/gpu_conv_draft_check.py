"""Draft KernelBench convolution problems with the compiler drafter on a GPU and time the draft
against eager PyTorch in-process (triton.testing.do_bench medians; max abs error against the
problem's Model in full fp32). A quick check of which convolution the drafter emits, not a
verification: `agent verify`/`agent bench` are that.

    python benchmarks/gpu_conv_draft_check.py .kb/level1/86_conv_depthwise_separable_2D.py ...

Prints one JSON line a problem (as soon as it is done) and writes nothing else.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import types

import torch
import triton

from tools.draft import draft_candidate
from tools.job.job_common import _copy_matching_weights, build_model, exec_module, make_inputs


def module(name: str, source: str, directory: str) -> types.ModuleType:
    path = os.path.join(directory, name + ".py")  # a real file: @triton.jit reads it back
    with open(path, "w") as f:
        f.write(source)
    return exec_module(source, path, name)


def check(path: str, directory: str) -> dict:
    t0 = time.monotonic()
    source = open(path).read()
    draft = draft_candidate(source, device="cuda")
    row = {"problem": os.path.basename(path), "draft_s": round(time.monotonic() - t0, 1),
           "kernels": draft.kernels, "library_calls": draft.library_calls}  # fmt: skip
    stem = os.path.basename(path)[:-3].replace("-", "_")
    problem = module("p_" + stem, source, directory)
    cand = module("c_" + stem, draft.source, directory)
    model, init = build_model(problem, 0, "cuda")
    new = cand.ModelNew(*init).cuda()
    _copy_matching_weights(model, new)
    inputs = make_inputs(problem, 1, "cuda")
    with torch.no_grad():
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        ref = model(*inputs)
        got = new(*inputs)
        row["max_abs_err"] = (got - ref).abs().max().item()
        torch.backends.cudnn.allow_tf32 = True  # eager as the user runs it: PyTorch's defaults
        row["eager_ms"] = triton.testing.do_bench(lambda: model(*inputs), warmup=5, rep=40)
        row["draft_ms"] = triton.testing.do_bench(lambda: new(*inputs), warmup=5, rep=40)
    row["speedup"] = round(row["eager_ms"] / row["draft_ms"], 3)
    return row


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        for p in sys.argv[1:]:
            try:
                print(json.dumps(check(p, d)), flush=True)
            except Exception as e:  # one problem's failure must not stop the rest
                print(
                    json.dumps(
                        {"problem": os.path.basename(p), "error": f"{type(e).__name__}: {e}"[:300]}
                    ),
                    flush=True,
                )
