"""Issue 33: a deep model's dynamic draft keeps its parameter shapes fixed
(tools/draft/capture.py `SYMBOLIC_PARAMETERS_MAX`): the shape environment's work grew faster than
the layers with a symbol for every parameter dimension."""

from __future__ import annotations

from tests.helpers import run_json_script


def _affine_chain(layers: int) -> str:
    return f"""import torch
import torch.nn as nn

batch_size = 2
features = 8


class Model(nn.Module):
    def __init__(self, features, layers):
        super().__init__()
        self.scales = nn.ParameterList([nn.Parameter(torch.rand(features) + 0.5) for _ in range(layers)])
        self.shifts = nn.ParameterList([nn.Parameter(torch.randn(features)) for _ in range(layers)])

    def forward(self, x):
        for scale, shift in zip(self.scales, self.shifts):
            x = torch.relu(x * scale + shift)
        return x


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, {layers}]
"""


def test_deep_model_drafts_with_parameter_shapes_fixed(tmp_path):
    """A dynamic draft gives parameter shapes symbols only for a model with at most
    SYMBOLIC_PARAMETERS_MAX parameters and buffers: past it the shape environment's work grew
    faster than the layers (benchmarks/results/cpu/depth_scaling). Inputs stay symbolic, and the
    fixed parameter shapes are listed with what the candidate assumes."""
    import re

    from tools.draft import draft_candidate
    from tools.draft.capture import SYMBOLIC_PARAMETERS_MAX

    deep = draft_candidate(_affine_chain(SYMBOLIC_PARAMETERS_MAX // 2 + 1))  # 18 tensors
    assert deep.dynamic
    assert "18 parameters and buffers" in deep.fixed_sizes[0], deep.fixed_sizes
    host = deep.source[deep.source.index("def call(") :]
    symbols = set(re.findall(r"\bs\d+\b", host))
    assert 1 <= len(symbols) <= 2, symbols  # the batch (and no symbol per parameter)
    assert "x.shape[0]" in deep.source.split("def forward(")[-1]
    # it runs, at another batch size than the draft's, and computes what Model does
    cand = tmp_path / "cand.py"
    cand.write_text(deep.source)
    prob = tmp_path / "prob.py"
    prob.write_text(_affine_chain(9))
    out = tmp_path / "out.json"
    got = run_json_script(RUN_BOTH, out, prob, cand, out)
    assert got["error"] < 1e-6, got


RUN_BOTH = r"""
import importlib.util, json, sys, torch

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

prob, cand = load(sys.argv[1], "prob"), load(sys.argv[2], "cand")
torch.manual_seed(0)
model = prob.Model(*prob.get_init_inputs())
torch.manual_seed(0)
new = cand.ModelNew(*prob.get_init_inputs())
x = torch.randn(3, 8)
with torch.no_grad():
    error = float((new(x) - model(x)).abs().max())
json.dump({"error": error}, open(sys.argv[3], "w"))
"""
