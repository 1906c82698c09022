"""A bf16/fp16 draft's convolutions are picked at draft time like an fp32 draft's (issue 36).

On the H200 (session 19) every half-precision convolution draft noted "convolution variants not
timed at draft time (CompilationError: at 107:18:)" (level1/55; 147:18 on level1/50's 3-channel
stem): the draft-time forward built the draft's `ModelNew` at fp32 beside the problem's bf16
inputs, so each convolution multiplied 2-byte inputs by fp32 weights and its tl.dot did not
compile (the same tl.dot compiled for sm_90 with bf16 weights beside them: the kernels were
not the cause). `tools.draft.loading.draft_model` builds it at the job's precision, as the
verifier does.

No GPU: the picks run under the interpreter through `draft_time_choice` (as a draft job calls
them, with a scripted timer), their launches are recorded and compiled for sm_90 at bf16 and
fp16; values are checked at fp16 only (the interpreter has no bf16 arithmetic) against torch's
fp32 convolution of the same 2-byte operands at KernelBench's half-precision tolerance.
"""

from __future__ import annotations

import pytest

from tests.helpers import run_json_script
from tools.core.problem_dtype import KERNELBENCH_TOLERANCE, PRECISION_ENV
from tools.kernels.triton_conv import candidate_source

PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 11, stride=4, padding=2)  # level1/50's, smaller
        self.conv = nn.Conv2d(16, 32, 3, bias=False)  # level1/55's
        self.depthwise = nn.Conv2d(32, 32, 3, groups=32)
        self.pointwise = nn.Conv2d(32, 24, 1)

    def forward(self, img, x):
        y = self.conv(x)
        return self.stem(img), y, self.depthwise(y), self.pointwise(y)


def get_inputs():
    return [torch.randn(2, 3, 27, 27), torch.randn(2, 16, 6, 9)]


def get_init_inputs():
    return []
"""

DRAFT_MODEL = """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 11, stride=4, padding=2)
        self.conv = nn.Conv2d(16, 32, 3, bias=False)
        self.depthwise = nn.Conv2d(32, 32, 3, groups=32)
        self.pointwise = nn.Conv2d(32, 24, 1)

    def forward(self, img, x):
        y = triton_convolution(x, self.conv.weight, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
        s = triton_convolution(
            img, self.stem.weight, self.stem.bias, [4, 4], [2, 2], [1, 1], False, [0, 0], 1
        )
        d = triton_convolution(
            y, self.depthwise.weight, self.depthwise.bias, [1, 1], [0, 0], [1, 1], False, [0, 0], 32
        )
        p = triton_convolution(
            y, self.pointwise.weight, self.pointwise.bias, [1, 1], [0, 0], [1, 1], False, [0, 0], 1
        )
        return s, y, d, p
"""

SCRIPT = r"""
import contextlib, importlib.util, io, json, sys, warnings
import torch, triton
import torch.nn.functional as F
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from tools.compile.jit_bridge import as_jit, compilable_language, unwrapped
from tools.compile.launch_record import record_launches
from tools.compile.tune import CONV_TILE_KEYS
from tools.core.problem_dtype import job_precision, torch_dtype
from tools.draft.conv_picks import TILE, VARIANTS, applicable, conv_geometry, pick_conv_variants
from tools.draft.launch_picks import draft_time_choice
from tools.draft.loading import load_problem

problem_path, draft_path, out_path, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
precision = job_precision()
dtype = torch_dtype(precision)
found = {}

# the draft-time picks as a draft job makes them (`draft_time_choice`), on the CPU
timed, seen = [], set()


def timer(run):
    key = json.dumps(run.info, sort_keys=True)
    timed.append(sorted(k for k in run.info if k != "site"))
    if key not in seen:  # each variant really runs (interpreter) once
        seen.add(key)
        run()
    return 1.0 if run.info.get("DIRECT_2D") or run.info.get("AS_GEMM") else 2.0


def pick(source, init_inputs, inputs, device):
    return pick_conv_variants(source, init_inputs, inputs, "cpu", timer=timer)


problem = load_problem(open(problem_path).read(), "cpu")
notes = []
with record_launches() as records:
    picked = draft_time_choice(pick, "convolution variants", open(draft_path).read(), problem, notes)
found["notes"] = notes
found["timed"] = sorted({",".join(t) for t in timed})
found["picked"] = [line.strip() for line in picked.splitlines() if "DIRECT_2D" in line or "AS_GEMM" in line]
found["pointer types"] = sorted({t for r in records for t in r.signature.values() if t.startswith("*")})


def sm90(record, dt):
    # the recorded launch compiled for sm_90 with its 2-byte pointers as `dt`
    with compilable_language(unwrapped(record.fn)):
        jit = as_jit(record.fn)
        names = list(jit.arg_names)
        signature = {
            n: record.signature[n].replace("fp16", dt).replace("bf16", dt) for n in names
        }
        src = ASTSource(
            fn=jit, signature=signature,
            constexprs={(names.index(k),): v for k, v in record.constexprs.items() if k in names},
            attrs={(names.index(k),): [["tt.divisibility", 16]] for k in record.aligned},
        )
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            triton.compile(src, target=GPUTarget("cuda", 90, 64),
                           options={"num_warps": record.num_warps, "num_stages": record.num_stages})


def compiled(launches):
    # each distinct launch (kernel, constexprs, warps, stages) for sm_90 at bf16 and fp16
    distinct = {}
    for r in launches:
        key = (r.name, json.dumps(r.constexprs, sort_keys=True, default=str), r.num_warps,
               r.num_stages)
        distinct.setdefault(key, r)
    said = {}
    for (name, constexprs, _, _), r in distinct.items():
        for dt in ("bf16", "fp16"):
            try:
                sm90(r, dt)
                said[f"{name} {constexprs} {dt}"] = "ok"
            except Exception as exc:
                said[f"{name} {constexprs} {dt}"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return said


if precision == "fp16":  # the same launches at bf16 differ only in their pointers' dtype
    found["picks sm90"] = compiled(records)

    # the picked draft computes the convolutions (fp16: the interpreter has no bf16 arithmetic)
    spec = importlib.util.spec_from_file_location("picked_draft", draft_path + ".picked.py")
    open(draft_path + ".picked.py", "w").write(picked)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(1)
    model = module.ModelNew().to(dtype)
    img, x = (t.to(dtype) for t in problem.module.get_inputs())
    outs = model(img, x)
    f = lambda t: None if t is None else t.float()
    y = F.conv2d(x.float(), f(model.conv.weight))
    refs = (
        F.conv2d(img.float(), f(model.stem.weight), f(model.stem.bias), stride=4, padding=2),
        y,
        F.conv2d(outs[1].float(), f(model.depthwise.weight), f(model.depthwise.bias), groups=32),
        F.conv2d(outs[1].float(), f(model.pointwise.weight), f(model.pointwise.bias)),
    )
    found["picked correct"] = [
        out.dtype == dtype and bool(torch.allclose(out.float(), ref, atol=tol, rtol=tol))
        for out, ref in zip(outs, refs)
    ]

    # every variant the picks try on an fp32 call of these shapes, run on 2-byte operands
    tile = dict(zip(CONV_TILE_KEYS, TILE))
    torch.manual_seed(0)
    shapes = [((2, 3, 27, 27), (16, 3, 11, 11), {"stride": 4, "padding": 2}),
              ((2, 16, 6, 9), (128, 16, 3, 3), {"padding": 1}),
              ((2, 32, 4, 7), (32, 1, 3, 3), {"groups": 32}),
              ((2, 32, 4, 7), (24, 32, 1, 1), {})]
    tried, right = [], []
    with record_launches() as variant_records:
        for xs, ws, kw in shapes:
            x32, w32 = torch.randn(xs), torch.randn(ws) / 4
            geometry = conv_geometry((x32, w32), kw)
            for v in VARIANTS:
                if not applicable(v, geometry, {}):
                    continue
                xh, wh = x32.to(dtype), w32.to(dtype)
                out = module.triton_convolution(xh, wh, **kw, **{**tile, **v})
                ref = F.conv2d(xh.float(), wh.float(), **kw)
                tried.append(json.dumps(v, sort_keys=True))
                right.append(bool(torch.allclose(out.float(), ref, atol=tol, rtol=tol)))
    found["variants tried"] = sorted(set(tried))
    found["variants correct"] = right
    found["variants sm90"] = compiled(variant_records)
open(out_path, "w").write(json.dumps(found))
"""


@pytest.fixture(scope="module")
def picks(tmp_path_factory):
    """precision -> what the draft-time picks of a four-convolution draft found in a job at that
    precision (the stem of level1/50, the 3x3 of level1/55, a depthwise and a pointwise layer);
    each precision run once."""
    found: dict[str, dict] = {}

    def run(precision: str) -> dict:
        if precision not in found:
            tmp = tmp_path_factory.mktemp(f"half_picks_{precision}")
            problem = tmp / "problem.py"
            problem.write_text(PROBLEM)
            draft = tmp / "draft.py"
            header = "import torch\nimport torch.nn as nn\n\n"
            draft.write_text(header + candidate_source(precision) + DRAFT_MODEL)
            out = tmp / "out.json"
            tol = KERNELBENCH_TOLERANCE[precision]
            found[precision] = run_json_script(
                SCRIPT, out, problem, draft, out, tol, env={PRECISION_ENV: precision}, timeout=600
            )
        return found[precision]

    return run


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_the_draft_time_picks_run_on_a_half_precision_draft(picks, precision):
    """Before issue 36's fix: one note, 'convolution variants not timed at draft time
    (InterpreterError: ... Both operands must be same dtype. Got fp16 and fp32)'."""
    found = picks(precision)
    assert not [n for n in found["notes"] if "not timed at draft time" in n], found["notes"]
    assert len([n for n in found["notes"] if n.startswith("conv#")]) == 4, found["notes"]
    assert "DIRECT_2D" in found["timed"] and "AS_GEMM" in found["timed"], found["timed"]
    assert any("DIRECT_2D=True" in line for line in found["picked"]), found["picked"]
    assert any("AS_GEMM=True" in line for line in found["picked"]), found["picked"]
    # every operand of every launch at the draft's precision: no fp32 weights beside them
    assert found["pointer types"] == [f"*{precision}"], found["pointer types"]


def test_every_launch_of_the_half_precision_picks_compiles_for_sm90(picks):
    """The fp16 job's launches, each compiled with its pointers at bf16 and at fp16 (the bf16
    job's differ only in those)."""
    compiled = picks("fp16")["picks sm90"]
    names = {key.split()[0] for key in compiled}
    assert {"_conv_gemm_kernel", "_conv_direct_kernel", "_conv_direct2d_kernel"} <= names
    assert "_conv_1x1_kernel" in names, names
    bad = {key: why for key, why in compiled.items() if why != "ok"}
    assert not bad, bad


def test_the_picked_half_precision_draft_computes_the_convolutions(picks):
    """fp16 only: the interpreter has no bf16 arithmetic."""
    assert picks("fp16")["picked correct"] == [True] * 4


def test_every_fp32_variant_runs_and_compiles_with_2_byte_operands(picks):
    """Each of `conv_picks.VARIANTS` that applies to these shapes at fp32 (bf16x3 and X_SPLIT
    are fp32 knobs: 2-byte operands take their native tl.dot), called on fp16 operands: correct
    under the interpreter, and each distinct launch compiles for sm_90 at bf16 and fp16."""
    found = picks("fp16")
    assert len(found["variants tried"]) >= 6, found["variants tried"]
    assert all(found["variants correct"]), found["variants correct"]
    bad = {key: why for key, why in found["variants sm90"].items() if why != "ok"}
    assert not bad, bad


LINEAR = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n_in: int, n_out: int):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [32, 16]
"""

TILES_SCRIPT = r"""
import json, sys
from tools.compile.tune import HALF_GEMM_TILES
from tools.draft.gemm_tiles import pick_tiles
from tools.draft.launch_picks import draft_time_choice
from tools.draft.loading import load_problem


def pick(source, init_inputs, inputs, device):
    return pick_tiles(
        source, init_inputs, inputs, "cpu", timer=lambda run: (run(), 1.0)[1],
        tiles=HALF_GEMM_TILES[:2],
    )


problem = load_problem(open(sys.argv[1]).read(), "cpu")
notes = []
draft_time_choice(pick, "GEMM tiles", open(sys.argv[2]).read(), problem, notes)
open(sys.argv[3], "w").write(json.dumps(notes))
"""


def test_the_gemm_tile_picks_run_on_a_half_precision_linear(tmp_path, monkeypatch):
    """The same fault in another picker: a bf16/fp16 nn.Linear's draft-time GEMM tiles were
    'not timed at draft time' (an fp32 weight beside the 2-byte input); level1/1 and 8 have no
    weights and were timed."""
    from tools.draft import draft_candidate

    problem = tmp_path / "linear.py"
    problem.write_text(LINEAR)
    monkeypatch.setenv(PRECISION_ENV, "fp16")
    draft = tmp_path / "draft.py"
    draft.write_text(draft_candidate(LINEAR).source)
    out = tmp_path / "notes.json"
    notes = run_json_script(TILES_SCRIPT, out, problem, draft, out)
    assert len(notes) == 1 and notes[0].startswith("gemm#0 (8x32 @ 32x16): tile"), notes


def test_a_drafts_model_is_built_at_the_jobs_precision(monkeypatch):
    """`draft_model` as every draft-time forward builds it: seed 0, the job's precision (fp32:
    as constructed)."""
    import types

    import torch

    from tools.draft.loading import draft_model

    module = types.SimpleNamespace(ModelNew=lambda n: torch.nn.Linear(n, 3))
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    fp32 = draft_model(module, [5], "cpu")
    torch.manual_seed(0)
    assert fp32.weight.dtype == torch.float32
    assert torch.equal(fp32.weight, torch.nn.Linear(5, 3).weight)
    monkeypatch.setenv(PRECISION_ENV, "bf16")
    half = draft_model(module, [5], "cpu")
    assert half.weight.dtype == torch.bfloat16 and half.bias.dtype == torch.bfloat16
    assert torch.equal(half.weight, fp32.weight.bfloat16())
