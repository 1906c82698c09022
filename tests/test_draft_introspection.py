"""Drafts never use introspection (issue 33).

minGPT's Block calls its MLP through a lambda, `self.mlpf = lambda x: m.dropout(m.c_proj(...))`
with `m = self.mlp`, so dynamo's sources for the MLP's sizes run through the lambda's closure
(`L['self'].mlpf.__closure__[0].cell_contents._modules['c_fc']...`). The drafter wrote that into
the candidate, and the verifier, which refuses `__closure__` & co., judged its own draft `cheat`.
`tools.draft.loading.plain_expr` now resolves such a path to the object's place in the module
tree, by identity, and refuses (DraftUnsupportedError, naming it) what has none.

The draft test drafts tests/fixtures/introspection/mingpt_block.py dynamically in a subprocess
and runs the candidate against Model under the interpreter (not the verifier's verdict: its
constructor rule for `torch.tril` is being changed beside this).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools.draft.assemble import model_new_source
from tools.draft.loading import load_problem, plain_expr, uses_introspection
from tools.draft.result import DraftUnsupportedError

ROOT = Path(__file__).resolve().parent.parent
BLOCK = ROOT / "tests" / "fixtures" / "introspection" / "mingpt_block.py"
INTROSPECTION = ("__closure__", "cell_contents", "__dict__", "f_back", "_getframe")

HIDDEN = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    def _closures():
        table = torch.ones(4)  # a tensor the model holds only inside a closure
        scale = 0.5
        return (lambda x: x + table), (lambda x: x * scale)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = nn.ModuleDict(dict(fc=nn.Linear(4, 4)))
            m = self.mlp
            self.mlpf = lambda x: m.fc(x)
            self.seq = nn.Sequential(nn.Linear(4, 4))
            s = self.seq
            self.seqf = lambda x: s(x)
            self.add_table, self.times_scale = _closures()

        def forward(self, x):
            return self.add_table(self.mlpf(x))


    def get_inputs():
        return [torch.rand(2, 4)]


    def get_init_inputs():
        return []
    """
)


@pytest.fixture(scope="module")
def hidden():
    return load_problem(HIDDEN, "cpu")


@pytest.mark.parametrize(
    "expr, plain",
    [
        (
            "self.mlpf.__closure__[0].cell_contents.fc.weight.shape[0]",
            "self.mlp.fc.weight.shape[0]",
        ),
        ("self.mlpf.__closure__[0].cell_contents.fc.weight", "self.mlp.fc.weight"),
        ("self.mlpf.__closure__[0].cell_contents", "self.mlp"),
        ("self.seqf.__closure__[0].cell_contents[0].bias", "self.seq[0].bias"),
        ("self.mlp.fc.in_features", "self.mlp.fc.in_features"),  # nothing to resolve
        ("x.shape[0]", "x.shape[0]"),
    ],
)
def test_closure_paths_resolve_to_module_attributes(hidden, expr, plain):
    got = plain_expr(hidden, expr)
    assert got == plain
    assert uses_introspection(got) == []


@pytest.mark.parametrize(
    "expr, named",
    [
        ("self.add_table.__closure__[0].cell_contents", "add_table"),  # a tensor only in a closure
        ("self.times_scale.__closure__[0].cell_contents", "times_scale"),  # a number
        ("self.mlpf.__globals__['torch']", "__globals__"),
    ],
)
def test_what_only_introspection_reaches_is_refused_by_name(hidden, expr, named):
    with pytest.raises(DraftUnsupportedError, match="introspection") as info:
        plain_expr(hidden, expr)
    assert named in str(info.value)


def test_model_new_refuses_introspection_in_its_forward(hidden):
    from tools.draft.loading import forward_signature

    args, _ = forward_signature(hidden)
    with pytest.raises(DraftUnsupportedError, match="__closure__"):
        model_new_source(
            hidden, args, ["x", "self.mlpf.__closure__[0].cell_contents"], "outputs[0]"
        )
    assert "self.mlp.fc.weight" in model_new_source(hidden, args, ["x", "self.mlp.fc.weight"], "o")


DRAFT_SCRIPT = r"""
import json, sys
from tools.draft import draft_candidate

r = draft_candidate(open(sys.argv[1]).read(), device="cpu")
open(sys.argv[2], "w").write(r.source)
json.dump({"dynamic": r.dynamic, "notes": r.notes, "mixed": r.mixed}, open(sys.argv[3], "w"))
"""

RUN_SCRIPT = r"""
import importlib.util, json, sys
import torch

def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m

problem, candidate = load("problem", sys.argv[1]), load("candidate", sys.argv[2])
out = []
for seed in range(2):
    torch.manual_seed(seed)
    model = problem.Model(*problem.get_init_inputs())
    new = candidate.ModelNew(*problem.get_init_inputs())
    new.load_state_dict(model.state_dict())
    x = problem.get_inputs()
    with torch.no_grad():
        want, got = model(*x), new(*[t.clone() for t in x])
    out.append({"shape_ok": want.shape == got.shape,
                "max_err": (got - want).abs().max().item(),
                "close": bool(torch.allclose(got, want, atol=1e-4, rtol=1e-4))})
print(json.dumps(out))
"""


def _env(workdir: Path, interpret: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(
        PYTHONPATH=str(ROOT),
        TORCHINDUCTOR_CACHE_DIR=str(workdir / "inductor-cache"),
        TRITON_CACHE_DIR=str(workdir / "triton-cache"),
    )
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return env


@pytest.mark.slow  # docs/testing.md: the unit tests above cover its paths and refusals
def test_mingpt_block_draft_has_no_introspection_and_matches(tmp_path):
    candidate, info = tmp_path / "candidate.py", tmp_path / "draft.json"
    proc = subprocess.run(
        [sys.executable, "-c", DRAFT_SCRIPT, str(BLOCK), str(candidate), str(info)],
        cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, f"drafting failed:\n{proc.stderr[-4000:]}"
    draft = json.loads(info.read_text())
    # the dynamic draft: its sizes are where the closure paths came from (a static draft reads
    # only tensors, which are matched by identity)
    assert draft["dynamic"], [n for n in draft["notes"] if "sizes fixed" in n]
    source = candidate.read_text()
    found = [name for name in INTROSPECTION if name in source]
    assert not found, f"the draft spells {found}"
    assert "self.mlp.c_fc.weight.shape[0]" in source  # the size read where the module is
    proc = subprocess.run(
        [sys.executable, "-c", RUN_SCRIPT, str(BLOCK), str(candidate)],
        cwd=ROOT, env=_env(tmp_path, interpret=True), capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    runs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert all(r["shape_ok"] and r["close"] for r in runs), runs
