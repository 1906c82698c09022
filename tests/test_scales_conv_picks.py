"""Issue 35: the drafter's bf16x3 pick (tools/draft/conv_picks.py) is gated over the scales the
verifier tries: a bf16x3 kernel accurate on the call's input as it came but not on it x100 or
shifted +3 is refused (before, one draw of get_inputs() decided), and the note says at which
input. Pure Python with scripted kernels and accuracy checks (no Triton)."""

from __future__ import annotations

import torch

from tools.draft.conv_picks import _pick_one, _refused

TILE = {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}
VARIANTS = [{"precision": "bf16x3"}, {"precision": "bf16x3", "X_SPLIT": True}]


def _real(x, w, b=None, **kwargs):
    """A scripted convolution: its output carries its input's magnitude and mean."""
    return torch.full((1,), float(x.abs().max())) + float(x.mean())


def _accurate_below(limit: float, *, centred: bool = False):
    """A scripted accuracy check that passes while the input's magnitude stays under `limit`
    (and, if `centred`, its mean is small against its magnitude), recording each call's
    input."""
    seen: list[tuple[float, float, list[str]]] = []

    def accuracy(outs, args, kwargs):
        x = args[0]
        seen.append((float(x.abs().max()), float(x.mean()), sorted(outs)))
        ok = float(x.abs().max()) < limit
        ok = ok and not (centred and float(x.mean()) > 0.2 * float(x.abs().max()))
        return {
            name: (ok, f"scripted: {name} {'close enough' if ok else 'too far'}") for name in outs
        }

    accuracy.seen = seen
    return accuracy


def test_the_gate_covers_the_verifiers_scales_and_an_offset():
    from tools.draft.conv_picks import GATE_INPUTS
    from tools.orchestrate.verify_options import SCALE_TRIALS

    assert GATE_INPUTS[0] == (1.0, 0.0)  # the input as it came, first
    assert {(s, 0.0) for s in SCALE_TRIALS} <= set(GATE_INPUTS)
    assert any(shift for _, shift in GATE_INPUTS)


def test_bf16x3_accurate_only_at_the_inputs_own_scale_is_refused_at_x100():
    torch.manual_seed(0)
    x, w = torch.randn(1, 16, 5, 6), torch.randn(20, 16, 3, 3)
    accuracy = _accurate_below(50.0)  # randn's range passes, x100 does not
    said: list[str] = []
    refused = _refused(VARIANTS, _real, (x, w, None), {}, TILE, accuracy, said)
    assert refused == {"bf16x3", "bf16x3 X_SPLIT"}
    # one call on the input as it came, one at x100 (where both are refused: no +3 call)
    magnitudes = [m for m, _, _ in accuracy.seen]
    assert len(magnitudes) == 2 and magnitudes[1] > 99 * magnitudes[0]
    assert any("too far at inputs x100" in s for s in said), said


def test_bf16x3_accurate_at_x100_but_not_shifted_is_refused_at_the_shift():
    torch.manual_seed(0)
    x, w = torch.randn(1, 16, 5, 6), torch.randn(20, 16, 3, 3)
    accuracy = _accurate_below(float("inf"), centred=True)
    said: list[str] = []
    assert _refused(VARIANTS, _real, (x, w, None), {}, TILE, accuracy, said) == {
        "bf16x3",
        "bf16x3 X_SPLIT",
    }
    assert len(accuracy.seen) == 3
    assert any("too far at inputs +3" in s for s in said), said


def test_bf16x3_accurate_at_every_gate_input_is_kept_and_picked():
    torch.manual_seed(0)
    x, w = torch.randn(1, 16, 5, 6), torch.randn(20, 16, 3, 3)
    accuracy = _accurate_below(float("inf"))
    timed = []

    def timer(run):
        timed.append(run.info)
        return 1.0 if run.info.get("precision") == "bf16x3" else 2.0

    keywords, note = _pick_one(0, _real, (x, w, None), {}, timer, accuracy)
    assert keywords.get("precision") == "bf16x3" and "picked" in note, note
    assert len(accuracy.seen) == 3  # each gate input checked once (as it came, x100, +3)
    assert all(names == ["bf16x3", "bf16x3 X_SPLIT"] for _, _, names in accuracy.seen)
    # and the one refused only at x100 is never timed: the call as written is kept
    timed.clear()
    keywords, note = _pick_one(0, _real, (x, w, None), {}, timer, _accurate_below(50.0))
    assert keywords.get("precision") != "bf16x3", note
    assert not any(i.get("precision") == "bf16x3" for i in timed)
    assert "at inputs x100" in note, note
