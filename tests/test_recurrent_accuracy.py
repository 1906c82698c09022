"""The recurrent kernels' accuracy at any input scale (issue 33): on the H200, KernelBench
level3/40_GRUHidden was judged `mismatch` at its x100 input trial (1 of 15,360 elements 9x the
fp32 error scale past the fp64 rule). The cause was the GRU's last step written as
(1 - z) n + z h: where z is within an ulp of 1 and the state sits still (h ~ 1.0003, n ~ 1 over
hundreds of steps), z * h rounds at h's ulp the same way every step and the state drifts (2e-5
over 500 steps, 84x PyTorch's error in a CPU emulation of the full problem); PyTorch's
n + z (h - n) keeps the fixed point. Beside it, tanh was (1 - e) / (1 + e) down to 0 (7,000 ulps
at 1e-4, 0 below 3e-8) and both nonlinearities used tl.exp, which a GPU computes as
ex2.approx(x * log2 e) with that product rounded (57 ulps in a sigmoid at |x| = 10..100).

Three checks:
- tanh and sigmoid under the interpreter against torch's fp64, 1e-8..1e3 both signs, in fp32
  ulps, and their special values;
- the same two compiled for sm_90 use IEEE-rounded operations only (no ex2.approx, no
  div.full), so what the interpreter measures is what a GPU computes (up to FMA contraction,
  which only removes roundings);
- a reduced level3/40 (two layers, 384 steps, hidden 32) at x100: h_n within the judge's fp32
  claim (`FP32_CLAIM_FACTOR` times PyTorch's fp32 error scale over its ulp-moved draws,
  `tools.checks.freshness.fp32_error_allowance`) at every element. The old order erred 21x
  there, the new one 1.1x.
About 30 s on one core, most of it the interpreted GRU.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import run_python_script

ULP_LIMIT = 3.0
"""The most fp32 ulps tanh and sigmoid may err by (PyTorch's own CPU sigmoid: 2.2; measured
after this change: tanh 2.1, sigmoid 2.0)."""

SCRIPT = r"""
import json, sys
import torch
import torch.nn as nn
import triton
import triton.language as tl

from tools.checks.compare import Tolerance, compare_outputs
from tools.checks.fp64_rule import FP32_CLAIM_FACTOR, claim_ratio, excuse_cap
from tools.checks.freshness import fp32_error_allowance
from tools.kernels.recurrent_kernels import _rnn_sigmoid, _rnn_tanh, triton_gru

torch.set_num_threads(1)
results = {}


@triton.jit
def _apply(x_ptr, y_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(y_ptr + i, FN(tl.load(x_ptr + i, mask=m, other=0.0)), mask=m)


def apply(fn, x):
    y = torch.empty_like(x)
    _apply[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), FN=fn, BLOCK=1024)
    return y


TINY = torch.finfo(torch.float32).tiny


def ulps(got, ref64):
    # |got - ref| in units of fp32's spacing at ref, where ref is a normal fp32 number
    spacing = torch.exp2(torch.floor(torch.log2(ref64.abs().clamp(min=TINY))) - 23)
    u = (got.double() - ref64).abs() / spacing
    return torch.where(ref64.abs() >= TINY, u, torch.zeros_like(u))


mag = torch.logspace(-8, 3, 20000, dtype=torch.float64).float()
x = torch.cat([mag, -mag, torch.linspace(-30, 30, 12001)])
special = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e30, -1e30])
for name, fn, ref in (("tanh", _rnn_tanh, torch.tanh), ("sigmoid", _rnn_sigmoid, torch.sigmoid)):
    u = ulps(apply(fn, x), ref(x.double()))
    bands = {}
    for lo, hi in ((0, 1e-4), (1e-4, 0.1), (0.1, 1), (1, 10), (10, 1e4)):
        sel = (x.abs() >= lo) & (x.abs() < hi)
        bands[f"{lo:g}..{hi:g}"] = u[sel].max().item()
    got, want = apply(fn, special), ref(special)
    results[name] = {
        "max_ulp": u.max().item(), "worst_x": x[u.argmax()].item(), "bands": bands,
        "special": [[str(g), str(w)] for g, w in zip(got.tolist(), want.tolist())],
        "signs": [bool(torch.signbit(g)) == bool(torch.signbit(w))
                  for g, w in zip(got, want) if not w.isnan()],  # fmt: skip
    }


class HiddenOnly(nn.Module):  # level3/40's forward: the GRU's h_n
    def __init__(self, gru):
        super().__init__()
        self.gru = gru

    def forward(self, x, h0):
        return self.gru(x, h0)[1]


T, B, I, H, L, SEED, SCALE = 384, 10, 32, 32, 2, 2, 100.0
torch.manual_seed(SEED)
gru = nn.GRU(I, H, L)
torch.manual_seed(SEED + 1)
x = torch.rand(T, B, I) * SCALE
h0 = torch.rand(L, B, H) * SCALE
model = HiddenOnly(gru)
with torch.no_grad():
    expected = model(x, h0)
    import copy
    reference64 = copy.deepcopy(model).double()(x.double(), h0.double())
    got = triton_gru(x, h0, [w.detach() for w in gru._flat_weights], L, False, False, True)[1]
made = {}
allowance = fp32_error_allowance(
    model, lambda: [x.clone(), h0.clone()], [expected], [reference64], seed=SEED,
    record=made, tolerances=[(1e-4, 1e-4)], budget_s=None,
)
diff = compare_outputs(
    [got], [expected], Tolerance(), trial=1, reference64=[reference64], allowance64=allowance,
    excuse_caps=[excuse_cap(n) for n in made["outside"]],
)
_, _, ratio = claim_ratio(got, expected, reference64, allowance[0])
results["gru_x100"] = {
    "kind": diff.kind, "message": diff.message, "max_ratio": ratio.max().item(),
    "over_claim": int((ratio > FP32_CLAIM_FACTOR).sum()), "claim": FP32_CLAIM_FACTOR,
    "draws": made["draws"],
}
json.dump(results, open(sys.argv[1], "w"))
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> dict:
    workdir = tmp_path_factory.mktemp("recurrent-accuracy")
    out = workdir / "results.json"
    run_python_script([SCRIPT, str(out)], workdir, interpret=True)
    return json.loads(out.read_text())


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_nonlinearity_within_ulps_at_any_scale(measured, name):
    r = measured[name]
    assert r["max_ulp"] <= ULP_LIMIT, (
        f"{name}: {r['max_ulp']:.3g} ulps at x = {r['worst_x']:.3g}; by |x|: {r['bands']}"
    )


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_nonlinearity_special_values(measured, name):
    r = measured[name]  # 0, -0, inf, -inf, nan, 1e30, -1e30: torch's values, the sign of 0 too
    assert all(g == w for g, w in r["special"]), r["special"]
    assert all(r["signs"]), r["special"]


def test_nonlinearities_compile_to_ieee_operations(tmp_path, monkeypatch):
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from tools.kernels.recurrent_kernels import _rnn_sigmoid, _rnn_tanh

    @triton.jit
    def both(x_ptr, s_ptr, t_ptr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + i)
        tl.store(s_ptr + i, _rnn_sigmoid(x))
        tl.store(t_ptr + i, _rnn_tanh(x))

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    sig = {"x_ptr": "*fp32", "s_ptr": "*fp32", "t_ptr": "*fp32", "BLOCK": "constexpr"}
    src = ASTSource(fn=both, signature=sig, constexprs={(3,): 128})
    ptx = triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    ops = set(re.findall(r"^\s*([a-z][\w.]*)\s", ptx, re.M))
    approximate = sorted(op for op in ops if ".approx" in op or op.startswith(("div.full", "ex2")))
    assert not approximate, f"approximate operations in the nonlinearities: {approximate}"
    assert "div.rn.f32" in ops  # the divisions are IEEE ones


def test_gru_at_x100_within_the_fp32_claim(measured):
    r = measured["gru_x100"]
    assert r["draws"] == 8
    assert r["over_claim"] == 0, (
        f"{r['over_claim']} elements of h_n past {r['claim']:g}x PyTorch's fp32 error scale "
        f"(worst {r['max_ratio']:.1f}x)"
    )
    assert r["kind"] == "ok", r["message"]
