"""A network's draft is made at the problem's sizes (`tools.draft.job._auto_sizes`, issue 33):
its dynamic draft spent most of Inductor's time in the shape environment's symbolic algebra
(reduced copies on the CPU, same load: ResNet-101 54 -> 21 s, DenseNet-121 138 -> 24 s;
benchmarks/results/cpu/level3_sizes). An operator's draft stays
dynamic, and a run that verifies other sizes (`--generalize`) drafts networks dynamic too."""

from __future__ import annotations

from agent.drafters import CompilerDrafter
from tools.draft.capture import SYMBOLIC_PARAMETERS_MAX
from tools.draft.job import draft_candidate, draft_job
from tools.sandboxing.sandbox import Sandbox


def _mlp(layers: int) -> str:
    return f"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(*[m for _ in range({layers}) for m in (nn.Linear(16, 16), nn.ReLU())])

    def forward(self, x):
        return self.net(x)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
"""


NETWORK = _mlp(SYMBOLIC_PARAMETERS_MAX // 2 + 1)  # 18 parameters: a network
OPERATOR = _mlp(2)  # 4 parameters


def test_a_network_is_drafted_at_the_problems_sizes():
    r = draft_candidate(NETWORK, device="cpu", sizes="auto")
    assert not r.dynamic
    assert any("a network's draft (18 parameters and buffers" in n for n in r.notes), r.notes
    assert "x.shape[0]" not in r.source  # the batch is the problem's


def test_an_operator_stays_dynamic_and_generalize_keeps_a_network_dynamic():
    assert draft_candidate(OPERATOR, device="cpu", sizes="auto").dynamic
    out = draft_job(NETWORK, "net.py", device="cpu", sizes="dynamic")
    assert out["dynamic"] and not any("a network's draft" in n for n in out["notes"])
    assert draft_job(NETWORK, "net.py", device="cpu")["dynamic"] is False  # the job's default


def test_the_drafter_asks_dynamic_sizes_when_the_run_generalizes():
    sb = Sandbox(device="cpu", max_workers=1)
    assert CompilerDrafter(sb, "cpu").sizes == "auto"
    assert CompilerDrafter(sb, "cpu", generalize=True).sizes == "dynamic"
