"""tools/draft/sized.py: a dynamic draft with a first path through the static draft's kernels
for the problem's own sizes. Drafts of examples/problems/layernorm.py (CPU Inductor, torch
2.13, in tests/fixtures/sized/), run under the Triton interpreter: the sized path runs at the
problem's sizes and only there, both paths match the reference, a static draft that computes
something else is refused, and the timing decides."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import run_json_script

FIXTURES = Path(__file__).parent / "fixtures" / "sized"
"""Drafts of examples/problems/layernorm.py and conv2d_clamp.py (CPU Inductor, torch 2.13);
the conv drafts hold a marker where the drafter put the convolution library."""

SCRIPT = r"""
import json, sys
import torch
sys.path.insert(0, "examples/problems")
import layernorm as problem
from tools.draft import sized
from tools.draft.launch_configs import load_module
import tempfile

dynamic = open(sys.argv[2]).read()
static = open(sys.argv[3]).read()
out = {}

def timer_for(sized_ms, dynamic_ms):
    return lambda run: sized_ms if run.info["sized"] else dynamic_ms

torch.manual_seed(0)
inputs = problem.get_inputs()
init = problem.get_init_inputs()
for name, (s_ms, d_ms) in {"faster": (1.0, 2.0), "slower": (1.99, 2.0)}.items():
    src, notes = sized.pick_sized_path(dynamic, static, init, inputs, "cpu", timer=timer_for(s_ms, d_ms))
    out[name] = {"combined": src != dynamic, "notes": notes}
    if name == "faster":
        combined = src

broken = static.replace("tmp19 + tmp20", "tmp19 - tmp20")
assert broken != static
src, notes = sized.pick_sized_path(dynamic, broken, init, inputs, "cpu", timer=timer_for(1.0, 2.0))
out["broken"] = {"combined": src != dynamic, "notes": notes}

with tempfile.TemporaryDirectory() as d:
    mod = load_module(combined, d, "combined")
    used = []
    real = mod.call_sized
    mod.call_sized = lambda args: used.append("sized") or real(args)
    torch.manual_seed(0)
    ref = problem.Model(*init)
    torch.manual_seed(0)
    new = mod.ModelNew(*init)
    new.load_state_dict(ref.state_dict())
    def check(x):
        used.clear()
        with torch.no_grad():
            ok = torch.allclose(new(x), ref(x), atol=1e-4, rtol=1e-4)
        return {"ok": ok, "sized": used == ["sized"]}
    out["published"] = check(inputs[0])
    out["other_batch"] = check(torch.randn(7, problem.HIDDEN))
    out["strided"] = check(torch.randn(problem.HIDDEN, problem.BATCH).t())
    new.ln.eps = 1e-3  # a plain-value attribute the static kernel baked in
    ref.ln.eps = 1e-3
    out["other_eps"] = check(inputs[0])
json.dump(out, open(sys.argv[1], "w"))
"""


def test_the_sized_path_runs_at_the_problems_sizes_and_only_there(tmp_path):
    out = tmp_path / "out.json"
    got = run_json_script(
        SCRIPT, out, out, FIXTURES / "layernorm_dynamic.py", FIXTURES / "layernorm_static.py"
    )
    assert got["faster"]["combined"], got["faster"]["notes"]
    assert "sized path taken" in got["faster"]["notes"][0]
    assert not got["slower"]["combined"] and "not taken" in got["slower"]["notes"][0]
    assert not got["broken"]["combined"] and "differ" in got["broken"]["notes"][0]
    assert got["published"] == {"ok": True, "sized": True}
    assert got["other_batch"] == {"ok": True, "sized": False}
    # other strides or another eps: not the sized path (the dynamic draft itself assumes
    # contiguous rows and this eps: its docstring says so)
    assert got["strided"]["sized"] is False and got["other_eps"]["sized"] is False


def test_drafts_of_another_shape_are_not_combined():
    from tools.draft.sized import NotCombinable, with_sized_path

    dynamic = (FIXTURES / "layernorm_dynamic.py").read_text()
    static = (FIXTURES / "layernorm_static.py").read_text()
    import pytest

    with pytest.raises(NotCombinable, match="call"):
        with_sized_path(dynamic, dynamic)  # nothing static to add
    other = static.replace("def forward(self, x: torch.Tensor):", "def forward(self, y):")
    with pytest.raises(NotCombinable, match="arguments"):
        with_sized_path(dynamic, other)


CONV_SCRIPT = r"""
import json, sys, tempfile
import torch
sys.path.insert(0, sys.argv[4])
import conv2d_clamp as problem
from tools.draft import sized
from tools.draft.launch_configs import load_module
from tools.compile.tune import conv_sites

dynamic = open(sys.argv[2]).read()
static = open(sys.argv[3]).read()
# the dynamic draft's draft-time pick, as conv_picks writes it
(site, call), = conv_sites(dynamic).items()
from tools.compile.tune import _conv_variant
_, dynamic = _conv_variant(dynamic, site, call, {"precision": "ieee", "X_SPLIT": True})
static = sized.copy_conv_keywords(dynamic, static)
out = {"static_keywords": {k.arg: getattr(k.value, "value", None)
                           for k in next(iter(conv_sites(static).values())).keywords
                           if k.arg in ("precision", "X_SPLIT")}}
torch.manual_seed(0)
inputs, init = problem.get_inputs(), problem.get_init_inputs()
combined, notes = sized.pick_sized_path(dynamic, static, init, inputs, "cpu",
                                        timer=lambda run: 1.0 if run.info["sized"] else 2.0)
out["notes"] = notes
with tempfile.TemporaryDirectory() as d:
    mod = load_module(combined, d, "combined")
    ref = problem.Model(*init)
    new = mod.ModelNew(*init)
    new.load_state_dict(ref.state_dict())
    used = []
    real = mod.call_sized
    mod.call_sized = lambda args: used.append(1) or real(args)
    with torch.no_grad():
        out["ok"] = torch.allclose(new(*inputs), ref(*inputs), atol=1e-4, rtol=1e-4)
        out["sized"] = used == [1]
        other = [torch.randn(1, 3, 5, 4)]
        used.clear()
        out["other_ok"] = torch.allclose(new(*other), ref(*other), atol=1e-4, rtol=1e-4)
        out["other_sized"] = bool(used)
# a fused epilogue is not copied
try:
    sized.copy_conv_keywords(dynamic.replace("X_SPLIT=True", "X_SPLIT=True, EPILOGUE=(a, b, c, d)"), static)
    out["epilogue"] = "copied"
except sized.NotCombinable as exc:
    out["epilogue"] = str(exc)
json.dump(out, open(sys.argv[1], "w"))
"""


CONV_SOURCE_MARK = "# @@ tools.kernels.triton_conv.candidate_source() @@\n"
"""Where the conv fixtures' drafts held the convolution library (the drafter copies
`candidate_source()` there): put back at test time, so the fixtures follow the library."""


def _conv_draft(name: str, tmp_path: Path) -> Path:
    from tools.kernels.triton_conv import candidate_source

    text = (FIXTURES / name).read_text()
    assert text.count(CONV_SOURCE_MARK) == 1
    path = tmp_path / name
    path.write_text(text.replace(CONV_SOURCE_MARK, candidate_source()))
    return path


def test_a_convolution_drafts_static_twin_takes_its_picks_and_runs_at_its_sizes(tmp_path):
    out = tmp_path / "out.json"
    got = run_json_script(
        CONV_SCRIPT,
        out,
        out,
        _conv_draft("conv2d_clamp_dynamic.py", tmp_path),
        _conv_draft("conv2d_clamp_static.py", tmp_path),
        FIXTURES,
    )
    assert got["static_keywords"] == {"precision": "ieee", "X_SPLIT": True}
    assert "sized path taken" in got["notes"][0], got["notes"]
    assert got["ok"] and got["sized"]
    assert got["other_ok"] and not got["other_sized"]
    assert "fused epilogue" in got["epilogue"]


def test_a_convolution_draft_gets_the_sized_path_unless_an_epilogue_is_fused(tmp_path):
    """Whether `draft_problem` drafts the static twin at all (`_wants_sized_path`). The
    convolution library inside every convolution draft declares `EPILOGUE=None`: on session 11's
    code a text search for "EPILOGUE=" found it and no convolution draft got the sized path
    (session 12's level-2 drafts had no "sized path" note). Only a call's keyword counts."""
    from tools.compile.tune import _conv_variant, conv_sites
    from tools.draft.job import _wants_sized_path
    from tools.draft.result import DraftResult

    source = _conv_draft("conv2d_clamp_dynamic.py", tmp_path).read_text()
    assert "EPILOGUE=None" in source  # the library's own signature
    draft = DraftResult(source=source, mixed=False, library_calls=[],
                        kernels=["triton_poi_fused_clamp_0"], notes=[])  # fmt: skip
    assert _wants_sized_path(draft)
    (site, call), = conv_sites(source).items()  # fmt: skip
    _, fused = _conv_variant(source, site, call, {"EPILOGUE": None})
    assert not _wants_sized_path(DraftResult(source=fused, mixed=False, library_calls=[],
                                             kernels=draft.kernels, notes=[]))  # fmt: skip
    assert not _wants_sized_path(DraftResult(source=source, mixed=True, library_calls=[],
                                             kernels=draft.kernels, notes=[]))  # fmt: skip


def test_a_second_draft_past_its_deadline_is_abandoned_and_the_first_kept(monkeypatch):
    """The sized path's second draft runs inside the draft job, which ends at its limit with
    nothing (600 s): past `SIZED_PATH_END_S` it is abandoned and the dynamic draft returned, with
    a note. The alarm is not an Exception: a speed choice's `except Exception` inside the second
    draft does not take it for its own failure."""
    import time

    from tools.draft import job
    from tools.draft.result import DraftResult

    swallowed = []

    def slow_draft(*args, **kwargs):
        try:
            time.sleep(30)
        except Exception:  # what the second draft's own speed choices do  # noqa: BLE001
            swallowed.append(True)
        raise AssertionError("not reached")

    monkeypatch.setattr(job, "one_draft", slow_draft)
    draft = DraftResult(source="dynamic", mixed=False, library_calls=[], kernels=["k"], notes=[])
    started = time.monotonic()
    out = job._with_sized_path(draft, problem=None, deadline=started + 0.5)
    assert time.monotonic() - started < 5
    assert out.source == "dynamic" and not swallowed
    assert len(out.notes) == 1 and out.notes[0].startswith("sized path abandoned after"), out.notes
    # a deadline already past: not started at all
    out = job._with_sized_path(draft, problem=None, deadline=started)
    assert out.source == "dynamic" and out.notes[-1].startswith("sized path abandoned after 0 s")
    # the alarm is gone afterwards
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    # no deadline (the default): no alarm at all, and nothing raised setting one
    with job._time_limit(float("inf")):
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
