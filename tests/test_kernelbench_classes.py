"""benchmarks/kernelbench_classes.py: per-class geomeans of bench directories (against older
ones with --before) and the counts of draft-time convolution choices, from the files alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import kernelbench_classes as kc  # noqa: E402


def _problem(root: Path, name: str, speedups: dict | None, response: str = "", correct=True):
    d = root / name / "00"
    d.mkdir(parents=True)
    (root / "bench.json").write_text("{}")
    status = "ok" if speedups and speedups.get("best", 0) >= 1 else "slower"
    sample = {"problem": name, "status": status, "correct": correct, "speedups": speedups}
    (d / "sample.json").write_text(json.dumps(sample))
    (d / "response.txt").write_text(response)


PICK = "conv#0 (1x16x8x8 * 16x16x3x3): {} picked on the GPU at draft time, 1.0 ms against 2.0 ms"
REFUSED = (
    "conv#0 (1x3x8x8 * 16x3x3x3): kept as written at draft time, the fastest within 3% (tile "
    "128x16x32, 8 warps, 3 stages, 3 rounds: as written 1.0 ms; bf16x3 max error against fp64 "
    "1.0e-05, 40.0x cuDNN fp32's (2.5e-07): over 32x)"
)


def test_classes_geomeans_and_conv_choices(tmp_path, capsys):
    now, old = tmp_path / "now" / "level1", tmp_path / "old" / "level1"
    _problem(now, "1_Square_matrix_multiplication_", {"best": 1.2, "eager": 1.2, "compile": 1.3})
    _problem(now, "50_conv_standard_2D", {"best": 0.5, "eager": 0.6, "compile": 0.5,
                                          "eager_fp32": 2.0}, PICK.format("precision='bf16x3'"))  # fmt: skip
    _problem(now, "51_conv_other", {"best": 2.0, "eager": 2.0, "compile": 2.5},
             PICK.format("precision='bf16x3', X_LAST=True"))  # fmt: skip
    _problem(now, "52_conv_stem", {"best": 1.0, "eager": 1.0, "compile": 1.0}, REFUSED)
    _problem(now, "20_LeakyReLU", {"best": 0.9, "eager": 1.5, "compile": 0.9})
    _problem(now, "53_conv_split", {"best": 1.0, "eager": 1.0, "compile": 1.0},
             PICK.format("precision='bf16x3', X_SPLIT=True") + "\n" + REFUSED.replace(
                 "bf16x3 max error", "bf16x3 X_SPLIT max error"))  # fmt: skip
    _problem(now, "54_conv_picks", {"best": 1.0, "eager": 1.0, "compile": 1.0},
             "\n".join(PICK.format(v) for v in ("precision='ieee', X_SPLIT=True",
                                                  "DIRECT_2D=True", "AS_GEMM=True",
                                                  "precision='bf16x3', X_SPLIT=True, PART_SUM=True"))
             + "\n" + REFUSED.replace("bf16x3 max error", "bf16x3 X_SPLIT PART_SUM max error"))  # fmt: skip
    _problem(old, "54_conv_picks", {"best": 1.0})
    _problem(old, "53_conv_split", {"best": 1.0})
    _problem(old, "50_conv_standard_2D", {"best": 0.25})
    _problem(old, "51_conv_other", {"best": 1.0})
    _problem(old, "52_conv_stem", {"best": 1.0})
    _problem(old, "1_Square_matrix_multiplication_", {"best": 1.2})
    _problem(old, "20_LeakyReLU", {"best": 0.9})
    assert kc.main([str(now), "--before", str(old)]) == 0
    out = capsys.readouterr().out
    rows = {
        line.split(" | ")[1]: line for line in out.splitlines() if line.startswith("| level1 |")
    }
    # convolutions: geomean of 0.5, 2.0, 1.0, 1.0, 1.0 = 1.0; before 0.25, 1.0, 1.0, 1.0, 1.0
    # -> 0.76; 4 at >= 0.97
    conv = rows["convolution"].split(" | ")
    assert conv[2:5] == ["5", "5", "1.00x"] and conv[7] == "4" and conv[8] == "2.00x"
    assert conv[9] == "0.76x" and conv[10].startswith("1.32x")
    assert rows["GEMM / attention"].split(" | ")[4] == "1.20x"
    assert rows["other"].split(" | ")[7] == "0"  # 0.9 is below 0.97 of the better
    # X_SPLIT 1, bf16x3 1, X_LAST 0, both 1, kept 3 (one site of 53 refused X_SPLIT, one of 54
    # refused PART_SUM), refused 3; exact X_SPLIT, DIRECT_2D, AS_GEMM, PART_SUM 1 each (54)
    choices = [line for line in out.splitlines() if line.startswith("| level1 | 1 |")]
    assert choices == ["| level1 | 1 | 1 | 0 | 1 | 3 | 3 | 1 | 1 | 1 | 1 |"], out


def test_a_directory_that_is_not_a_bench_output_is_refused(tmp_path, capsys):
    now = tmp_path / "now"
    _problem(now, "1_x", {"best": 1.0})
    assert kc.main([str(tmp_path / "nowhere")]) == 2
    assert "not a bench output" in capsys.readouterr().err
    assert kc.main([str(now), "--before"]) == 2  # no older directory for it
