"""benchmarks/level3_small.py's `--tiny` copies: the 17 level-3 networks session 20 left
unverified, with only module-level size constants and get_inputs literals changed (issue 33)."""

from __future__ import annotations

import difflib
import re
import sys

import pytest

from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import level3_small as small  # noqa: E402

LEVEL3 = ROOT.parent / "shared" / "kernelbench" / "level3"
UNVERIFIED = {  # session 20's "not run" rows (benchmarks/results/cpu/level3_sizes/README.md)
    "5_AlexNet", "7_GoogleNetInceptionV1", "10_ResNet101", "12_VGG19", "15_DenseNet121",
    "16_DenseNet201", "18_SqueezeNet", "20_MobileNetV2", "21_EfficientNetMBConv",
    "22_EfficientNetB0", "23_EfficientNetB1", "24_EfficientNetB2", "26_ShuffleNet", "27_RegNet",
    "29_SwinMLP", "30_SwinTransformerV2", "45_UNetSoftmax",
}  # fmt: skip
needs_level3 = pytest.mark.skipif(not LEVEL3.is_dir(), reason="../shared/kernelbench not present")


def test_tiny_is_the_unverified_networks():
    assert {name.removesuffix(".py") for name in small.TINY} == UNVERIFIED


@needs_level3
@pytest.mark.parametrize("name", sorted(small.TINY))
def test_tiny_changes_only_module_constants_and_get_inputs(name):
    text = (LEVEL3 / name).read_text()
    tiny = small.reduce_source(name, text, small.TINY)
    get_inputs = text.partition("def get_inputs")[2].splitlines()
    removed = [
        line[1:]
        for line in difflib.unified_diff(text.splitlines(), tiny.splitlines(), lineterm="", n=0)
        if line.startswith("-") and not line.startswith("---")
    ]
    for line in removed:  # a module-level assignment, or a line of get_inputs
        assert re.match(r"[A-Za-z_][\w, ]* *=", line) or line in get_inputs, (name, line)
    classes = text.partition("\nbatch_size")[0]  # every class and helper: unchanged
    assert tiny.startswith(classes)


@needs_level3
@pytest.mark.parametrize("name", ["7_GoogleNetInceptionV1.py", "26_ShuffleNet.py", "27_RegNet.py"])
def test_tiny_copies_run_at_their_sizes(name, tmp_path):
    """The smallest images and batch 1 where the architecture allows: built and run eagerly."""
    assert small.main([str(tmp_path), "--src", str(LEVEL3), "--tiny"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.py")) == sorted(small.TINY)
    report = small.check(tmp_path / name)
    batch = small.TINY[name]["batch_size"]
    assert f"out [({batch}, 10)]" in report, report
