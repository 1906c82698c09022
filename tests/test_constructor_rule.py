"""The constructor rule (issues 33 and 34): setup a constructor computes from constants (a causal
mask made with `torch.tril`, a positional-encoding table, an index table) is what the reference's
own `__init__` does and is allowed; work on the weights (values drawn under the harness's seed, or
the reference's weights while they are copied in) other than initialising them is forward's work
done outside forward, a `cheat`, whether in `__init__`, in a `load_state_dict` hook, or in an
`_apply` / `.to()` override. Unit tests of `tools.checks.constructor_audit.ConstructorAuditMode`, then whole
verifications on the CPU.

Before the rule, the causal mask was `cheat` ("aten.tril (in the constructor)"), and a fold done
with the arithmetic the init whitelist allowed (mul/add in a loop), or in a hook of the weight
copy (which ran outside every audit), was `ok`."""

from __future__ import annotations

import glob
import types

import pytest
import torch
import torch.nn as nn

from tools.checks.audit import constructor_audited
from tools.core.problem import read_problem


def _ctor(build):
    torch.manual_seed(0)
    with torch.no_grad(), constructor_audited() as (mode, _):
        build()
    folds, compute = dict(mode.folds), dict(mode.compute)
    mode.release()
    return folds, compute


class _Setup(nn.Module):
    """Everything an honest constructor does in KernelBench-style networks."""

    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8))
        pe = torch.zeros(8, 4)
        pos = torch.arange(8).float()[:, None]
        pe[:, 0::2] = torch.sin(pos / 100)
        pe[:, 1::2] = torch.cos(pos / 100)
        self.register_buffer("pe", pe)
        self.fc = nn.Linear(4, 4)
        self.w_t = nn.Parameter(self.fc.weight.t().contiguous())  # re-layout
        self.emb = nn.Embedding(10, 4, padding_idx=0)
        self.ln, self.bn, self.lstm = nn.LayerNorm(4), nn.BatchNorm2d(4), nn.LSTM(4, 4, 2)
        self.mha = nn.MultiheadAttention(8, 2)
        w = torch.empty(4, 4)
        nn.init.trunc_normal_(w, std=0.02)
        self.w2 = nn.Parameter(w)
        nn.init.kaiming_normal_(self.fc.weight, mode="fan_out")
        self.w3 = nn.Parameter(self.fc.weight * 0.5)  # a scalar scale: initialisation arithmetic
        self.hidden = torch.randn(3, 4)


def test_honest_setup_is_allowed():
    assert _ctor(_Setup) == ({}, {})


def _two():
    a, b = nn.Linear(4, 4, bias=False), nn.Linear(4, 4, bias=False)
    return a, b


def _fold_mm():
    a, b = _two()
    return b.weight @ a.weight


def _fold_loop():  # only ops the old init whitelist allowed
    a, b = _two()
    w = torch.zeros(4, 4)
    for k in range(4):
        w.add_(b.weight[:, k : k + 1] * a.weight[k : k + 1, :])
    return w


def _fold_one_draw():  # one draw split in two "weights"
    t = torch.rand(8, 4)
    return t[:4] * t[4:]


def _fold_constant_matrix():
    a = nn.Linear(4, 4, bias=False)
    return a.weight @ torch.arange(16.0).view(4, 4)


def _fold_in_python():
    a = nn.Linear(4, 4, bias=False)
    return torch.tensor([[float(v) for v in row] for row in a.weight])


def _fold_in_numpy():
    a = nn.Linear(4, 4, bias=False)
    return torch.from_numpy(a.weight.numpy() @ a.weight.numpy())


@pytest.mark.parametrize(
    "fold",
    [_fold_mm, _fold_loop, _fold_one_draw, _fold_constant_matrix, _fold_in_python, _fold_in_numpy],
)
def test_work_on_the_weights_is_refused(fold):
    folds, _ = _ctor(fold)
    assert folds, fold.__name__


def test_every_kernelbench_constructor_is_setup():
    """All 192 problems of ../shared/kernelbench: Model built, a second copy's weights loaded in
    (the reference's weights marked as the harness marks them): nothing refused."""
    files = sorted(glob.glob("../shared/kernelbench/level*/*.py"))
    if not files:
        pytest.skip("../shared/kernelbench not present")
    refused = {}
    for f in [f for f in files if "level3" in f][::4]:  # the suite's time; all 192 pass (CHANGELOG)
        mod = types.ModuleType("p")
        try:
            exec(compile(open(f).read(), f, "exec"), mod.__dict__)
        except ImportError:
            continue
        init = mod.get_init_inputs()
        torch.manual_seed(0)
        with torch.no_grad(), constructor_audited() as (mode, _):
            m, ref = mod.Model(*init), mod.Model(*init)
            for t in list(ref.parameters()) + list(ref.buffers()):
                if t.is_floating_point():
                    mode.mark(t.detach())
            m.load_state_dict(ref.state_dict(), strict=False)
        if mode.folds or mode.compute:
            refused[f] = dict(mode.folds) | dict(mode.compute)
        mode.release()
    assert refused == {}


# ---------------------------------------------------------------------------------------------
# Whole verifications (CPU interpreter, sandboxed jobs)

MASK_PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, t):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(t, t)).view(1, t, t))

    def forward(self, x):
        return x.masked_fill(self.bias[:, : x.size(1), : x.size(2)] == 0, 0.0)

T = 24

def get_inputs():
    return [torch.randn(3, T, T)]

def get_init_inputs():
    return [T]
"""

MASK_KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _masked_kernel(x_ptr, m_ptr, y_ptr, n, tt, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(x_ptr + offs, mask=ok)
    m = tl.load(m_ptr + offs % tt, mask=ok)
    tl.store(y_ptr + offs, tl.where(m == 0, 0.0, x), mask=ok)


class ModelNew(nn.Module):
    def __init__(self, t):
        super().__init__()
        # minGPT's causal mask, built the way the reference builds it
        self.register_buffer("bias", torch.tril(torch.ones(t, t)).view(1, t, t))

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _masked_kernel[(triton.cdiv(n, 256),)](x, self.bias, y, n, x.size(1) * x.size(2), BLOCK=256)
        return y
"""

MLP_PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d, bias=False)
        self.b = nn.Linear(d, d, bias=False)

    def forward(self, x):
        return self.b(self.a(x))

D = 16

def get_inputs():
    return [torch.randn(8, D)]

def get_init_inputs():
    return [D]
"""

MATMUL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mm_kernel(x_ptr, w_ptr, y_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # y = x @ w.T (w is [N, K], as nn.Linear keeps it)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K))
    w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K))
    acc = tl.dot(x, w, input_precision="ieee")
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def linear(x, w):
    m, k = x.shape
    n = w.shape[0]
    y = torch.empty(m, n, device=x.device, dtype=x.dtype)
    _mm_kernel[(triton.cdiv(m, 16), triton.cdiv(n, 16))](x, w, y, m, n, k, BM=16, BN=16, BK=16)
    return y
"""

FOLD_IN_HOOK = (
    MATMUL
    + """

class ModelNew(nn.Module):
    # The reference's weights arrive through load_state_dict: fold them there, one GEMM in forward.
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d, bias=False)
        self.b = nn.Linear(d, d, bias=False)
        self.register_load_state_dict_post_hook(ModelNew._fold)

    @staticmethod
    def _fold(module, incompatible):
        module.folded = module.b.weight @ module.a.weight

    def forward(self, x):
        return linear(x, self.folded)
"""
)

FOLD_IN_APPLY = (
    MATMUL
    + """

class ModelNew(nn.Module):
    # Same-seed weights: fold them when the harness moves the module (`_apply`).
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d, bias=False)
        self.b = nn.Linear(d, d, bias=False)

    def _apply(self, fn, *args, **kwargs):
        out = super()._apply(fn, *args, **kwargs)
        w = torch.zeros_like(self.a.weight)
        for k in range(w.shape[1]):
            w.add_(self.b.weight[:, k : k + 1] * self.a.weight[k : k + 1, :])
        self.folded = w
        return out

    def forward(self, x):
        return linear(x, self.folded)
"""
)

HONEST_MLP = (
    MATMUL
    + """

class ModelNew(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.a = nn.Linear(d, d, bias=False)
        self.b = nn.Linear(d, d, bias=False)

    def forward(self, x):
        return linear(linear(x, self.a.weight), self.b.weight)
"""
)


def _problem(tmp_path, text):
    path = tmp_path / "problem.py"
    path.write_text(text)
    return read_problem(str(path))


def test_causal_mask_built_with_tril_in_the_constructor_is_ok(cpu_verifier, tmp_path):
    verdict = cpu_verifier.verify(_problem(tmp_path, MASK_PROBLEM), MASK_KERNEL, "k.py")
    assert verdict.status == "ok", (verdict.status, verdict.message)


def test_honest_mlp_is_ok(cpu_verifier, tmp_path):
    verdict = cpu_verifier.verify(_problem(tmp_path, MLP_PROBLEM), HONEST_MLP, "k.py")
    assert verdict.status == "ok", (verdict.status, verdict.message)


@pytest.mark.parametrize("kernel", [FOLD_IN_HOOK, FOLD_IN_APPLY], ids=["load_hook", "apply"])
def test_weights_folded_during_the_weight_copy_are_a_cheat(cpu_verifier, kernel, tmp_path):
    verdict = cpu_verifier.verify(_problem(tmp_path, MLP_PROBLEM), kernel, "k.py")
    assert verdict.status == "cheat", (verdict.status, verdict.message)
    assert "constructor" in verdict.message
