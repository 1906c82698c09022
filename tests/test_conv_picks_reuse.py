"""Issue 33: convolution call sites alike (a deep network's repeated layers) are timed once at
draft time (tools/draft/conv_picks.py), under the interpreter with a scripted timer."""

from __future__ import annotations

REPEATED_CONVS = """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(16, 16, 3, padding=1)
        self.b = nn.Conv2d(16, 16, 3, padding=1)
        self.c = nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x):
        y = triton_convolution(x, self.a.weight, self.a.bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        y = triton_convolution(y, self.b.weight, self.b.bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        y = triton_convolution(y, self.c.weight, self.c.bias, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        return y
"""

PICKS_SCRIPT = r"""
import json, sys, torch
from tools.draft.conv_picks import pick_conv_variants

timed, checked = [], []

def timer(run):
    timed.append(run.info["site"])
    return 1.0 if run.info.get("precision") == "bf16x3" and not run.info.get("X_SPLIT") else 2.0

def accuracy(outs, args, kwargs):
    site = len(checked)
    checked.append(sorted(outs))
    # the third call's own operands refuse bf16x3 (accuracy depends on values, not shapes)
    refuse = float(args[1].abs().max()) == float(REFUSED[0])
    return {name: (not refuse, "scripted") for name in outs}

source = open(sys.argv[1]).read()
torch.manual_seed(0)
x = torch.randn(1, 16, 5, 6)
import importlib.util, os
path = os.path.join(sys.argv[3], "m.py")
open(path, "w").write(source)
spec = importlib.util.spec_from_file_location("m", path)
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
torch.manual_seed(0)
REFUSED = [m.ModelNew().c.weight.abs().max()]
picked, notes = pick_conv_variants(source, [], [x], "cpu", timer=timer, accuracy=accuracy)
json.dump({"picked": picked, "notes": notes, "timed": timed}, open(sys.argv[2], "w"))
"""


def test_conv_sites_alike_are_timed_once(tmp_path):
    """Convolution call sites with the same shapes, strides and arguments (a deep network's
    repeated layers) take the first one's pick without being timed again; a bf16x3 pick is
    still checked against each site's own operands, and a site that refuses it is timed on its
    own (before: every site timed every variant, ROUNDS rounds each)."""
    from tests.helpers import run_json_script
    from tools.compile import tune
    from tools.kernels.triton_conv import candidate_source

    src = tmp_path / "draft.py"
    src.write_text("import torch\nimport torch.nn as nn\n\n" + candidate_source() + REPEATED_CONVS)
    out = tmp_path / "out.json"
    got = run_json_script(PICKS_SCRIPT, out, src, out, tmp_path)
    assert set(got["timed"]) == {0, 2}, got["notes"]
    keywords = {
        site: {k.arg: k.value.value for k in call.keywords}
        for site, call in tune.conv_sites(got["picked"]).items()
    }
    assert keywords[0] == keywords[1] == {"precision": "bf16x3"}
    assert keywords[2] != keywords[0]
    assert any("conv#1" in n and "as conv#0" in n for n in got["notes"]), got["notes"]


def test_picks_written_with_one_parse(monkeypatch):
    """The picks are written into the draft in one pass: one parse of the draft for any number
    of sites (re-parsing it for each site was quadratic in a network's convolutions), and the
    text is what writing them one by one gives."""
    import tools.draft.conv_picks as cp
    from tools.compile import tune
    from tools.core import pyast

    body = "\n".join(
        f"    y = triton_convolution(y, w{i}, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)"
        for i in range(40)
    )
    source = f"def forward(y, {', '.join(f'w{i}' for i in range(40))}):\n{body}\n    return y\n"
    sites = tune.conv_sites(source)
    values = {site: ({"precision": "bf16x3"} if site % 2 else {}) for site in sites}
    parses = []
    real = pyast.parse
    monkeypatch.setattr(pyast, "parse", lambda *a, **k: parses.append(1) or real(*a, **k))
    out = cp._with_keywords(source, sites, values)
    assert parses == []
    one_by_one = source
    for site in sorted(sites, reverse=True):
        if values[site]:
            _, one_by_one = tune._conv_variant(
                one_by_one, site, tune.conv_sites(one_by_one)[site], values[site]
            )
    assert out == one_by_one
    assert out.count("precision='bf16x3'") == 20
