"""Recurrent layers (nn.RNN, nn.LSTM, nn.GRU) in Triton through the compiler drafter (issue 33).

torch.compile cannot trace them, so before this lowering every problem here drafted nothing
("Attempted to wrap RNN, GRU, or LSTM"). Three parts, each in ONE subprocess:
- the launchers of tools/kernels/recurrent_kernels.py, from the text `candidate_source()` returns (what
  candidates get), against nn.LSTM/GRU/RNN in fp64, sizes that are not powers of two and span
  several batch, hidden and reduction blocks (interpreter; natively on a GPU);
- every problem in tests/fixtures/recurrent/ (small copies of KernelBench level3/36, 37, 38, 40,
  41, 42, plus a GRU with batch_first and no bias, an nn.RNN with ReLU and no initial state, and
  an LSTM on an unbatched sequence) drafted with `draft_candidate` on the CPU, then each
  candidate run against its Model;
- two candidates verified by the project's verifier under the strict policy (one trial; one of
  them also compiles every kernel for sm_90).
About 35 s of CPU: 63 s of wall time on the shared 2-core machine at a moderate load, 4 minutes
at a load average of 12; most of it Inductor's drafts and the two verifications.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_python_script

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "recurrent"
REFUSED = sorted((ROOT / "tests" / "fixtures" / "recurrent_refused").glob("*.py"))
PROBLEMS = sorted(p.name for p in FIXTURES.glob("*.py"))
LAUNCHERS = {"lstm": "triton_lstm(", "gru": "triton_gru(", "rnn": "triton_rnn("}

# name -> (module, batch_first, bidirectional, bias, with initial state, B, T, I, H, layers[,
# launch keywords]). B = 17 spans two 16-row batch blocks; H = 33..40 two 32-wide hidden and
# reduction blocks. PIPELINE (off by default) runs a unidirectional stack's layers at once;
# bidirectional stacks and single layers never take it.
PIPE = {"PIPELINE": True}
CASES = {
    "lstm_bf_bidir_bias_state": ("lstm", True, True, True, True, 3, 5, 7, 6, 2),
    "lstm_two_blocks_no_bias_no_state": ("lstm", False, False, False, False, 17, 3, 33, 40, 1),
    "lstm_pipeline_two_blocks": ("lstm", True, False, True, True, 17, 3, 9, 33, 3, PIPE),
    "lstm_layer_by_layer": ("lstm", True, False, True, True, 3, 4, 7, 6, 3),
    "gru_bf_bidir_bias_state": ("gru", True, True, True, True, 3, 5, 7, 6, 2),
    "gru_three_layers_bidir_no_bias": ("gru", False, True, False, True, 17, 4, 5, 37, 3),
    "gru_pipeline_bias_state": ("gru", False, False, True, True, 3, 5, 7, 6, 3, PIPE),
    "rnn_pipeline_relu_no_state": ("rnn_relu", False, False, True, False, 4, 3, 5, 7, 2, PIPE),
    "rnn_tanh_bidir_bias": ("rnn_tanh", False, True, True, True, 2, 6, 9, 33, 2),
    "rnn_relu_bf_no_bias_no_state": ("rnn_relu", True, False, False, False, 5, 4, 3, 6, 3),
}

INTERPRETED_SCRIPT = r"""
import importlib.util, json, sys
import torch
import torch.nn as nn
from tools.kernels.recurrent_kernels import candidate_source

path, cases, results_path, pairs = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4:]
open(path, "w").write(candidate_source())
spec = importlib.util.spec_from_file_location("recurrent_source", path)
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)
device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
for name, (kind, bf, bidir, bias, state, B, T, I, H, L, *launch) in cases.items():
    launch = launch[0] if launch else {}
    torch.manual_seed(0)
    kw = dict(batch_first=bf, bidirectional=bidir, bias=bias)
    if kind == "lstm":
        module = nn.LSTM(I, H, L, **kw)
    elif kind == "gru":
        module = nn.GRU(I, H, L, **kw)
    else:
        module = nn.RNN(I, H, L, nonlinearity=kind.split("_")[1], **kw)
    D = 2 if bidir else 1
    x = torch.randn((B, T, I) if bf else (T, B, I))
    h0 = torch.randn(L * D, B, H) if state else None
    c0 = torch.randn(L * D, B, H) if state else None
    with torch.no_grad():  # the reference in fp64
        ref64 = module.double()
        hx = None if not state else ((h0.double(), c0.double()) if kind == "lstm" else h0.double())
        out, hn = ref64(x.double(), hx)
        ref = [out, *(hn if kind == "lstm" else (hn,))]
        module.float()
    dev = lambda t: None if t is None else t.to(device)
    weights = [w.detach().to(device) for w in module._flat_weights]
    args = (L, bidir, bf, bias)
    if kind == "lstm":
        got = lib.triton_lstm(dev(x), dev(h0), dev(c0), weights, *args, **launch)
    elif kind == "gru":
        got = lib.triton_gru(dev(x), dev(h0), weights, *args, **launch)
    else:
        got = lib.triton_rnn(dev(x), dev(h0), weights, *args, kind.split("_")[1], **launch)
    results[name] = {
        "shapes": [[list(g.shape), list(r.shape)] for g, r in zip(got, ref)],
        "contiguous": all(g.is_contiguous() for g in got),
        "max_err": max((g.double().cpu() - r).abs().max().item() for g, r in zip(got, ref)),
    }

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

def flat(value):
    if isinstance(value, torch.Tensor):
        return [value]
    return [t for v in value for t in flat(v)]

for pair in pairs:  # each drafted candidate against its Model, same seed and weights
    problem_path, candidate_path = pair.split("::")
    problem, candidate = load(problem_path, "problem"), load(candidate_path, "candidate")
    torch.manual_seed(1)
    model = problem.Model(*problem.get_init_inputs())
    torch.manual_seed(1)
    model_new = candidate.ModelNew(*problem.get_init_inputs())
    model_new.load_state_dict(model.state_dict(), strict=False)
    inputs = problem.get_inputs()
    with torch.no_grad():
        want, got = flat(model(*inputs)), flat(model_new(*inputs))
    results[problem_path] = [
        [list(w.shape), list(g.shape)] if w.shape != g.shape else (w - g).abs().max().item()
        for w, g in zip(want, got, strict=True)
    ]
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
    workdir = tmp_path_factory.mktemp("recurrent-drafts")
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
    """The launcher cases and every drafted candidate against its Model, in one process."""
    workdir = tmp_path_factory.mktemp("recurrent-interpreted")
    out = workdir / "results.json"
    source = str(workdir / "recurrent_source.py")
    pairs = [f"{FIXTURES / n}::{d['path']}" for n, d in drafts.items() if "path" in d]
    args = [INTERPRETED_SCRIPT, source, json.dumps(CASES), str(out), *pairs]
    _run(args, workdir, interpret=True)
    return {Path(key).name: value for key, value in json.loads(out.read_text()).items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_launcher_matches_torch(interpreted, case):
    result = interpreted[case]
    assert all(got == want for got, want in result["shapes"]), result["shapes"]
    assert result["contiguous"], "outputs must be contiguous (the custom ops' fake strides)"
    assert result["max_err"] <= 2e-5, f"max abs error against fp64 {result['max_err']:.2e}"


@pytest.mark.parametrize("name", PROBLEMS)
def test_draft_is_all_triton(drafts, name):
    draft = drafts[name]
    assert "error" not in draft, draft.get("error")
    assert not draft["mixed"] and draft["library_calls"] == [], draft["library_calls"]
    assert {"_rnn_input_proj_kernel", "_rnn_recurrence_kernel"} <= set(draft["kernels"])
    source = draft["source"]
    module = "lstm" if "lstm" in name else "gru" if "gru" in name else "rnn"
    assert LAUNCHERS[module] in source.split("def call(", 1)[1], "call does not use the launcher"
    assert "torch.ops.tagent" not in source and "_VF" not in source
    assert "tools" not in {line.split()[1].split(".")[0] for line in source.splitlines()
                           if line.startswith(("import ", "from "))}  # fmt: skip
    assert "__closure__" not in source, "introspection in the candidate"
    assert any("tf32x3" in note and "recurrent" in note for note in draft["notes"])


@pytest.mark.parametrize("name", PROBLEMS)
def test_candidate_matches_model(interpreted, name):
    errors = interpreted[name]  # one entry per output tensor: max abs error, or both shapes
    assert all(isinstance(e, float) and e <= 1e-4 for e in errors), errors


@pytest.mark.parametrize(
    "name, why",
    [
        ("lstm_dropout.py", "dropout=0.5 between recurrent layers"),
        ("lstm_proj_size.py", "proj_size=4"),
    ],
)
def test_what_the_lowering_cannot_match_is_refused(drafts, name, why):
    error = drafts[name].get("error", "")
    assert error.startswith("DraftUnsupportedError") and why in error, error


@pytest.mark.parametrize(
    "name, target, pipeline",
    [
        # LSTM (its kernel has the most live tiles: four gates), h_n, its layers pipelined
        # (the candidate's RNN_CONFIG switched); every kernel compiled for sm_90 too
        ("lstm_hn.py", "sm_90", True),
        # GRU, bidirectional, batch_first, no bias, two outputs; the default launch
        ("gru_batch_first_no_bias.py", None, False),
    ],
)
def test_draft_verifies_ok_under_strict_policy(drafts, name, target, pipeline, tmp_path):
    from tools.orchestrate.verify import verify

    source = drafts[name]["source"]
    if pipeline:
        default = '"PIPELINE": False'
        assert source.count(default) == 1, "RNN_CONFIG's PIPELINE not found in the candidate"
        source = source.replace(default, '"PIPELINE": True')
    candidate = tmp_path / f"candidate_{name}"
    candidate.write_text(source)
    verdict = verify(
        str(FIXTURES / name), str(candidate), policy="strict", trials=1, aot_target=target,
        timeout_s=120,
    )  # fmt: skip
    assert verdict.status == "ok", f"{verdict.status}: {verdict.message}"
    audit = verdict.evidence.audit
    assert audit.library_ops == [] and audit.torch_compute_ops == []
    assert {"_rnn_input_proj_kernel", "_rnn_recurrence_kernel"} <= set(audit.kernels)
    if target:
        assert verdict.evidence.aot_errors == []
