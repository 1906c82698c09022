"""Attention (F.scaled_dot_product_attention) as one fused Triton kernel through the compiler
drafter (issue 33).

Before this lowering, Inductor drafted SDPA on the CPU as its math form (two bmm through the GEMM
template and a softmax kernel: the score matrix in memory) and on CUDA as a library call.
Three parts, each in ONE subprocess:
- the launcher of tools/kernels/attention_kernels.py, from the text `candidate_source()` returns (what
  candidates get), against SDPA in fp64: causal or not, boolean and additive masks, 3-D inputs,
  grouped heads, queries and keys of different lengths and value dims, sequences of 9-40 (not
  multiples of the blocks); dropout's mask read through an identity V; and the kernel compiled for
  sm_90 at head dim 64 (level 3's transformers) without spills (interpreter; natively on a GPU);
- every problem in tests/fixtures/attention/ (SDPA causal, with a boolean mask and its own scale,
  with an additive buffer mask on 3-D inputs, with dropout; minGPT's hand-written attention with
  its tril buffer; a small copy of level3/32's nn.TransformerEncoderLayer) drafted with
  `draft_candidate` on the CPU, then each deterministic candidate run against its Model; a 5-D
  SDPA refused;
- four candidates verified by the project's verifier under the strict policy (one trial: causal
  by a mask and by is_causal, a boolean mask, an encoder layer without; one also compiles its
  kernel for sm_90).
And, in this process, the kernel compiled for sm_90 at head dims 64 and 128 without spills, and
the hand-written pattern match on Dynamo graphs: what it fuses, what it leaves.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_python_script

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "attention"
REFUSED = sorted((ROOT / "tests" / "fixtures" / "attention_refused").glob("*.py"))
PROBLEMS = sorted(p.name for p in FIXTURES.glob("*.py"))
STOCHASTIC = {"sdpa_dropout.py"}  # compared on distributions by the verifier, not here

# name -> (batch, heads (0: 3-D inputs), kv heads, L, S, E, Ev, causal, mask kind)
CASES = {
    "plain": (2, 2, 2, 19, 19, 16, 16, False, None),
    "causal": (2, 2, 2, 37, 37, 16, 16, True, None),
    "causal_more_queries_than_keys": (2, 2, 2, 40, 9, 16, 16, True, None),
    "bool_mask_value_dim_24": (2, 2, 2, 23, 40, 16, 24, False, "bool"),
    "additive_mask": (2, 2, 2, 21, 33, 16, 16, False, "additive"),
    "grouped_heads": (2, 4, 2, 21, 33, 16, 16, False, None),
    "three_dims_2d_bool_mask_dim_12": (2, 0, 0, 21, 33, 12, 16, False, "bool2d"),
}

INTERPRETED_SCRIPT = r"""
import importlib.util, json, sys
import torch
import torch.nn.functional as F
from tools.kernels.attention_kernels import candidate_source

path, cases, results_path, pairs = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4:]
open(path, "w").write(candidate_source())
spec = importlib.util.spec_from_file_location("attention_source", path)
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)
device = "cuda" if torch.cuda.is_available() else "cpu"
dev = lambda t: None if t is None else t.to(device)
results = {}
torch.manual_seed(0)
for name, (B, H, HK, L, S, E, EV, causal, mask_kind) in cases.items():
    lead = (B, H) if H else (B,)
    lead_kv = (B, HK) if H else (B,)
    q, k, v = torch.randn(*lead, L, E), torch.randn(*lead_kv, S, E), torch.randn(*lead_kv, S, EV)
    mask = None
    if mask_kind == "bool":
        mask = torch.rand(B, 1, L, S) > 0.3
        mask[..., 0] = True
    elif mask_kind == "bool2d":
        mask = torch.rand(L, S) > 0.3
        mask[:, 0] = True
    elif mask_kind == "additive":
        mask = torch.randn(1, H, L, S)
    gqa = bool(H) and HK != H
    ref = F.scaled_dot_product_attention(
        q.double(), k.double(), v.double(), is_causal=causal, enable_gqa=gqa,
        attn_mask=None if mask is None else (mask if mask.dtype == torch.bool else mask.double()),
    )
    got = lib.triton_attention(dev(q), dev(k), dev(v), dev(mask), 0.0, causal, None, gqa)
    results[name] = {
        "shapes": [list(got.shape), list(ref.shape)],
        "contiguous": got.is_contiguous(),
        "max_err": (got.double().cpu() - ref).abs().max().item(),
    }

# Dropout through an identity V: the output is the dropped attention weights themselves.
B, H, L, E, p = 2, 2, 40, 16, 0.3
q, k = torch.randn(B, H, L, E), torch.randn(B, H, L, E)
eye = torch.eye(L).expand(B, H, L, L)
weights = torch.softmax((q @ k.transpose(-1, -2)).double() / E**0.5 + torch.full((L, L), float("-inf")).triu(1), -1)
runs = [lib.triton_attention(dev(q), dev(k), dev(eye), None, p, True, None, False).double().cpu()
        for _ in range(2)]
live = weights > 0  # the causal part
kept = [(r != 0) & live for r in runs]
results["dropout"] = {
    "dropped": [1 - (k_.sum() / live.sum()).item() for k_ in kept],
    "kept_err": max((r - weights / (1 - p))[k_].abs().max().item() for r, k_ in zip(runs, kept)),
    "outside_causal": max(r[~live].abs().max().item() for r in runs),
    "same_mask": bool(torch.equal(kept[0], kept[1])),
}

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

for pair in pairs:  # each drafted candidate against its Model, same seed and weights
    problem_path, candidate_path = pair.split("::")
    problem, candidate = load(problem_path, "problem"), load(candidate_path, "candidate")
    torch.manual_seed(1)
    model = problem.Model(*problem.get_init_inputs())
    torch.manual_seed(1)
    model_new = candidate.ModelNew(*problem.get_init_inputs())
    model_new.load_state_dict(model.state_dict(), strict=False)
    model_new = model_new.to(device)
    inputs = problem.get_inputs()
    with torch.no_grad():
        want = model(*inputs)
        got = model_new(*[t.to(device) for t in inputs]).cpu()
    results[problem_path] = (
        [list(want.shape), list(got.shape)] if want.shape != got.shape
        else (want - got).abs().max().item()
    )
json.dump(results, open(results_path, "w"))
"""

DRAFT_SCRIPT = r"""
import json, sys
from tools.draft import draft_candidate

out = {}
for path in sys.argv[2:]:
    try:
        r = draft_candidate(open(path).read(), device="cpu")
    except Exception as exc:
        out[path] = {"error": f"{type(exc).__name__}: {exc}"}
        continue
    out[path] = {"source": r.source, "mixed": r.mixed, "library_calls": r.library_calls,
                 "kernels": r.kernels, "notes": r.notes}
json.dump(out, open(sys.argv[1], "w"))
"""


def _run(args: list[str], workdir: Path, interpret: bool) -> None:
    run_python_script(args, workdir, interpret=interpret)


@pytest.fixture(scope="module")
def drafts(tmp_path_factory) -> dict[str, dict]:
    workdir = tmp_path_factory.mktemp("attention-drafts")
    out = workdir / "drafts.json"
    paths = [str(FIXTURES / name) for name in PROBLEMS] + [str(p) for p in REFUSED]
    _run([DRAFT_SCRIPT, str(out), *paths], workdir, interpret=False)
    drafted = {Path(path).name: draft for path, draft in json.loads(out.read_text()).items()}
    for name, draft in drafted.items():
        if "source" in draft:
            draft["path"] = str(workdir / f"candidate_{name}")
            Path(draft["path"]).write_text(draft["source"])
    return drafted


@pytest.fixture(scope="module")
def interpreted(drafts, tmp_path_factory) -> dict:
    """The launcher cases and every deterministic drafted candidate against its Model, in one
    process."""
    workdir = tmp_path_factory.mktemp("attention-interpreted")
    out = workdir / "results.json"
    source = str(workdir / "attention_source.py")
    pairs = [
        f"{FIXTURES / n}::{d['path']}"
        for n, d in drafts.items()
        if "path" in d and n not in STOCHASTIC
    ]
    args = [INTERPRETED_SCRIPT, source, json.dumps(CASES), str(out), *pairs]
    _run(args, workdir, interpret=True)
    return {Path(key).name: value for key, value in json.loads(out.read_text()).items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_launcher_matches_fp64(interpreted, case):
    result = interpreted[case]
    got, want = result["shapes"]
    assert got == want
    assert result["contiguous"], "the output must be contiguous (the custom op's fake strides)"
    assert result["max_err"] <= 2e-6, f"max abs error against fp64 {result['max_err']:.2e}"


def test_dropout_drops_at_rate_p_and_rescales(interpreted):
    result = interpreted["dropout"]
    # 2 x 2 x 820 causal weights a run: the dropped share's standard deviation is ~0.008
    assert all(abs(d - 0.3) < 0.04 for d in result["dropped"]), result["dropped"]
    assert result["kept_err"] <= 1e-6, "a kept weight is the softmax's divided by 1 - p"
    assert result["outside_causal"] == 0.0
    assert not result["same_mask"], "two calls drew the same dropout mask"


@pytest.mark.parametrize(
    "mask, causal, dropout, head_dim",
    [(0, True, False, 64), (1, False, False, 64), (2, False, True, 64), (2, False, True, 128)],
    ids=["causal-64", "bool_mask-64", "additive_mask_dropout-64", "additive_mask_dropout-128"],
)
def test_kernel_compiles_for_sm90_without_spills(
    mask, causal, dropout, head_dim, tmp_path, monkeypatch
):
    """At level 3's head dims (64, 128; the compile depends on the constexprs, not the sequence),
    with the default launch parameters for that head dim. Compiled here, from a record written
    by hand, not from launches recorded in the interpreter's process: in this file's first
    version, there (after the launcher cases), tools.compile.aot failed on `tl.rand` ("Unsupported
    function referenced: _patch_lang_core.<locals>._new_static_assert"); standalone scripts
    recording the same launches after an interpreted dropout launch compiled: cause not found."""
    from tools.compile.aot import LaunchRecord, aot_compile
    from tools.kernels.attention_kernels import _attention_kernel, attention_config

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    names = list(_attention_kernel.arg_names)
    types = {n: "*fp32" for n in names[:6]}
    types.update(mask_ptr="*i1" if mask == 1 else "*fp32", seed_ptr="*i64")
    types.update({n: "i32" for n in names[6:12]}, scale="fp32", dropout_p="fp32")
    types.update(dropout_scale="fp32")
    types.update({n: "i32" for n in names[15:35]})
    config = attention_config(head_dim)
    constexprs = {
        "MASK": mask, "CAUSAL": causal, "DROPOUT": dropout,
        "PRECISION": config["precision"], "BLOCK_M": config["BLOCK_M"],
        "BLOCK_N": config["BLOCK_N"], "BLOCK_E": head_dim, "BLOCK_EV": head_dim,
    }  # fmt: skip
    constexprs.update(dict.fromkeys(["sqe", "ske", "sve", "soe"], 1))  # as a launch specialises
    types.update(dict.fromkeys(constexprs, "constexpr"))
    assert set(types) == set(names), set(names) ^ set(types)
    record = LaunchRecord(
        name="_attention_kernel", fn=_attention_kernel, signature=types, constexprs=constexprs,
        num_warps=config["num_warps"], num_stages=config["num_stages"],
        file=_attention_kernel.fn.__code__.co_filename,
        aligned=[n for n, t in types.items() if t.startswith("*")],
    )  # fmt: skip
    result = aot_compile(record, "sm_90")
    assert not hasattr(result, "kind"), f"{result.kind}: {result.message[:2000]}"
    assert result.spills_bytes == 0, (
        f"{result.spills_bytes} bytes spilled, {result.registers} registers"
    )


HANDWRITTEN = r"""
import math
import torch
import torch.nn.functional as F

TRIL = torch.tril(torch.ones(9, 9)).view(1, 1, 9, 9)


def mingpt(q, k, v):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(TRIL[:, :, :9, :9] == 0, float("-inf"))
    att = F.softmax(att, dim=-1)
    att = F.dropout(att, 0.0, True)
    return att @ v


def divided_with_bias(q, k, v, bias):
    return torch.softmax(q @ k.transpose(-1, -2) / 4.0 + bias, dim=-1) @ v


def weights_returned_too(q, k, v):
    att = torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1)
    return att @ v, att


def keys_broadcast(q, k, v):
    return torch.softmax(q @ k[:1].transpose(-2, -1), dim=-1) @ v


def filled_with_minus_1e9(q, k, v):
    att = (q @ k.transpose(-2, -1)).masked_fill(TRIL == 0, -1e9)
    return torch.softmax(att, dim=-1) @ v
"""


@pytest.mark.parametrize(
    "name, fused",
    [
        ("mingpt", 1),
        ("divided_with_bias", 1),
        ("weights_returned_too", 0),  # the weights have another user: nothing to fuse
        ("filled_with_minus_1e9", 0),  # not -inf: not SDPA's semantics, left alone
        ("keys_broadcast", 0),  # matmul broadcasts a batch of 1: the op takes one batch
    ],
)
def test_handwritten_attention_pattern(name, fused, tmp_path):
    """`fuse_handwritten_attention` on Dynamo's graph of each function: how many it fuses, and
    the rewritten graph (the op's real implementation: PyTorch's SDPA) computes what the
    function does. No Inductor: a backend that only keeps the graph."""
    import importlib.util

    import torch

    from tools.draft.attention import fuse_handwritten_attention, register_op

    (tmp_path / "handwritten.py").write_text(HANDWRITTEN)
    spec = importlib.util.spec_from_file_location("handwritten", tmp_path / "handwritten.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, name)
    register_op()
    torch.manual_seed(0)
    args = [torch.randn(2, 2, 9, 16) for _ in range(3)]
    if name == "divided_with_bias":
        args.append(torch.randn(9, 9))
    graphs = []

    def backend(gm, example_inputs):
        graphs.append((gm, example_inputs))
        return gm.forward

    torch._dynamo.reset()
    try:
        torch.compile(fn, backend=backend, fullgraph=True)(*args)
    finally:
        torch._dynamo.reset()
    gm, inputs = graphs[-1]
    assert fuse_handwritten_attention(gm.graph) == fused
    ops = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert (torch.ops.tagent.attention.default in ops) == bool(fused)
    want, got = fn(*args), gm(*inputs)
    want = want[0] if isinstance(want, tuple) else want
    assert (want - got[0]).abs().max().item() <= 1e-5


@pytest.mark.parametrize("weights_used", [False, True])
def test_multihead_attention_weights_not_computed_when_unread(weights_used):
    """nn.MultiheadAttention's default need_weights=True goes through bmm and softmax, not SDPA;
    where its weights are not read, `weights_not_needed` switches the call to need_weights=False
    (the SDPA path, so the fused kernel), and the output stays what the module returns."""
    import torch
    import torch.nn.functional as F

    from tools.draft.attention import weights_not_needed

    torch.manual_seed(0)
    attn = torch.nn.MultiheadAttention(32, 2, batch_first=True)
    x = torch.randn(2, 19, 32)

    def forward(x):
        out, weights = attn(x, x, x)
        return out + weights.sum() if weights_used else out

    graphs = []

    def backend(gm, example_inputs):
        graphs.append((gm, example_inputs))
        return gm.forward

    torch._dynamo.reset()
    try:
        torch.compile(forward, backend=backend, fullgraph=True)(x)
    finally:
        torch._dynamo.reset()
    gm, inputs = graphs[-1]
    assert weights_not_needed(gm.graph) == (0 if weights_used else 1)
    gm.recompile()
    calls = [n for n in gm.graph.nodes if n.target is F.multi_head_attention_forward]
    assert [n.kwargs.get("need_weights", True) for n in calls] == [weights_used]
    with torch.no_grad():
        assert (gm(*inputs)[0] - forward(x)).abs().max().item() <= 1e-5


@pytest.mark.parametrize("name", PROBLEMS)
def test_draft_is_all_triton_with_the_fused_kernel(drafts, name):
    draft = drafts[name]
    assert "error" not in draft, draft.get("error")
    assert not draft["mixed"] and draft["library_calls"] == [], draft["library_calls"]
    assert "_attention_kernel" in draft["kernels"]
    source = draft["source"]
    call = source.split("def call(", 1)[1]
    assert "triton_attention(" in call, "call does not use the fused kernel"
    assert "torch.ops.tagent" not in source and "scaled_dot_product" not in call
    assert "tools" not in {line.split()[1].split(".")[0] for line in source.splitlines()
                           if line.startswith(("import ", "from "))}  # fmt: skip
    assert "__closure__" not in source, "introspection in the candidate"
    assert any("tf32x3" in note and "attention" in note for note in draft["notes"])
    if name.startswith("sdpa_"):  # SDPA alone: no other kernel (was two bmm and a softmax)
        assert draft["kernels"] == ["_attention_kernel"], draft["kernels"]


@pytest.mark.parametrize("name", sorted(set(PROBLEMS) - STOCHASTIC))
def test_candidate_matches_model(interpreted, name):
    error = interpreted[name]  # max abs error, or both shapes
    assert isinstance(error, float) and error <= 1e-4, error


def test_what_the_kernel_cannot_do_is_refused(drafts):
    error = drafts["sdpa_five_dims.py"].get("error", "")
    assert error.startswith("DraftUnsupportedError") and "5, 5 and 5 dimensions" in error, error


def test_attention_kernels_are_in_the_draft_cache_key():
    import agent.drafters as drafters

    names = {p.replace("\\", "/").split("tools/", 1)[-1] for p in drafters.drafter_files()}
    assert "kernels/attention_kernels.py" in names


@pytest.mark.parametrize(
    "name, target",
    [
        # minGPT's hand-written attention (matched on Dynamo's graph): GEMM template, Inductor's
        # kernels (the tril buffer's mask) and the fused attention
        ("handwritten_causal_attention.py", None),
        # a boolean mask as an input, a scale of the Model's own; compiled for sm_90 too
        ("sdpa_bool_mask.py", "sm_90"),
        # causal, no mask
        ("sdpa_causal.py", None),
        # level3/32's layer: nn.MultiheadAttention's SDPA, no mask, not causal
        ("transformer_encoder.py", None),
    ],
)
def test_draft_verifies_ok_under_strict_policy(drafts, name, target, tmp_path):
    from tools.orchestrate.verify import verify

    candidate = tmp_path / f"candidate_{name}"
    candidate.write_text(drafts[name]["source"])
    verdict = verify(
        str(FIXTURES / name), str(candidate), policy="strict", trials=1, aot_target=target,
        timeout_s=120,
    )  # fmt: skip
    assert verdict.status == "ok", f"{verdict.status}: {verdict.message}"
    audit = verdict.evidence.audit
    assert audit.library_ops == [] and audit.torch_compute_ops == []
    assert "_attention_kernel" in audit.kernels
    if target:
        assert verdict.evidence.aot_errors == []
