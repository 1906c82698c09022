"""One clock for a network's speed choices at draft time (tools/draft/choice_clock.py, issue 33):
a draft with more choices than `NETWORK_SITES` shares `NETWORK_CHOICES_S` among them; past it no
convolution variant, GEMM tile or launch config is timed any more and the draft keeps what it
wrote, with a note; an operator's draft keeps each choice's own budget. Under the Triton
interpreter with scripted timers (do_bench needs a GPU)."""

from __future__ import annotations

import time

import pytest

from tests.helpers import run_json_script
from tests.test_conv_picks import DRAFT as CONV_DRAFT
from tests.test_gemm_tiles import TWO_GEMMS
from tools.draft import choice_clock


@pytest.fixture(autouse=True)
def _fresh_clock():
    choice_clock.start()
    yield
    choice_clock.start()


def test_an_operators_draft_has_no_shared_clock():
    assert choice_clock.count(choice_clock.NETWORK_SITES) is False
    assert not choice_clock.spent()
    assert choice_clock.deadline(45.0) == pytest.approx(time.monotonic() + 45.0, abs=1.0)


def test_a_networks_choices_share_one_clock_set_by_the_first_count():
    before = time.monotonic()
    assert choice_clock.count(choice_clock.NETWORK_SITES + 1) is True
    end = before + choice_clock.NETWORK_CHOICES_S
    assert choice_clock.deadline(1e9) == pytest.approx(end, abs=1.0)  # the clock ends first
    assert choice_clock.deadline(1.0) < end  # a shorter own budget ends first
    # the sized path's static draft counts again: the first count's clock stands
    assert choice_clock.count(1) is True and choice_clock.deadline(1e9) == pytest.approx(end, abs=1.0)
    choice_clock.start()  # a new draft
    assert choice_clock.count(1) is False and not choice_clock.spent()


def test_draft_time_choice_is_not_made_once_a_networks_clock_is_spent(monkeypatch):
    from tools.draft.launch_picks import draft_time_choice

    class Problem:
        class module:
            @staticmethod
            def get_init_inputs():
                return []

        inputs: list = []

    made = []

    def pick(source, init, inputs, device):
        made.append(source)
        return source + "# picked", ["picked"]

    notes: list[str] = []
    assert draft_time_choice(pick, "GEMM tiles", "src", Problem, notes) == "src# picked"
    choice_clock.count(choice_clock.NETWORK_SITES + 1)
    monkeypatch.setattr(choice_clock, "_state", {**choice_clock._state, "deadline": 0.0})
    assert choice_clock.spent()
    assert draft_time_choice(pick, "GEMM tiles", "src", Problem, notes) == "src"
    assert made == ["src"]
    assert "GEMM tiles not timed: the network's" in notes[-1]


SCRIPT = r"""
import json, sys, torch
from tools.draft import choice_clock
from tools.draft.conv_picks import pick_conv_variants
from tools.draft.gemm_tiles import pick_tiles

def spent_network_clock():
    choice_clock.start()
    choice_clock.count(choice_clock.NETWORK_SITES + 1)
    choice_clock._state["deadline"] = 0.0  # the network's seconds are over

labels = []
def timer(run):
    labels.append(run.label)
    run()
    return 1.0

accept = lambda outs, a, k: {name: (True, "ok") for name in outs}
conv, gemms = open(sys.argv[1]).read(), open(sys.argv[2]).read()
torch.manual_seed(0)
x, img = torch.randn(1, 16, 5, 6), torch.randn(2, 3, 6, 5)
out = {}
for clock in ("operator", "network spent"):
    choice_clock.start()
    if clock != "operator":
        spent_network_clock()
    labels.clear()
    picked, notes = pick_conv_variants(conv, [], [x, img], "cpu", timer=timer, accuracy=accept)
    conv_labels = list(labels)
    labels.clear()
    tiles, tile_notes = pick_tiles(gemms, [24, 72], [torch.randn(70, 24)], "cpu", timer=timer)
    out[clock] = {"conv_labels": conv_labels, "conv_notes": notes, "conv_same": picked == conv,
                  "conv_source": picked,
                  "tile_labels": list(labels), "tile_notes": tile_notes, "tiles_same": tiles == gemms}
# a network's clock still running: every convolution is run as picked and its autotuner's tile
# pinned (the interpreter has no autotuner: a scripted one stands in for `autotuned_tile`)
import tools.draft.conv_picks as cp
pinned = []
def fake_autotuned_tile(tuners, real, args, kwargs):
    pinned.append(sorted(k for k in kwargs if k in cp.CONV_TILE_KEYS))
    tile = {"BLOCK_M": 64, "BLOCK_N": 32 + 16 * len(pinned), "BLOCK_K": 16, "num_warps": 4,
            "num_stages": 2}
    return tile, real(*args, **kwargs)
cp.autotuned_tile = fake_autotuned_tile
choice_clock.start()
choice_clock.count(choice_clock.NETWORK_SITES + 1)
choice_clock._state["deadline"] = float("inf")  # a loaded machine must not run out the clock here
picked, notes = pick_conv_variants(conv, [], [x, img], "cpu", timer=timer, accuracy=accept)
out["network running"] = {"source": picked, "notes": notes, "pinned_calls": list(pinned)}

# a network whose clock runs out after its first convolution is timed: the next call of the same
# kind takes that pick untimed, a call of another kind (the depthwise one) stays as written
import time as _time
first_pick = cp._pick_one
def pick_then_stop(site, *a, **k):
    got = first_pick(site, *a, **k)
    choice_clock._state["deadline"] = 0.0  # the clock runs out after this call's timing
    return got
cp._pick_one = pick_then_stop
def split_wins(run):
    run()
    return 0.5 if run.info.get("X_SPLIT") and run.info.get("precision") == "ieee" else 1.0
choice_clock.start()
choice_clock.count(choice_clock.NETWORK_SITES + 1)
picked, notes = pick_conv_variants(conv, [], [x, img], "cpu", timer=split_wins, accuracy=accept)
out["network runs out"] = {"source": picked, "notes": notes}
json.dump(out, open(sys.argv[3], "w"))
"""


@pytest.fixture(scope="module")
def script_result(tmp_path_factory):
    """SCRIPT's three runs (an operator, a network past its clock, a network within it), in
    one process."""
    tmp_path = tmp_path_factory.mktemp("clock")
    conv, gemms, out = tmp_path / "conv.py", tmp_path / "gemms.py", tmp_path / "out.json"
    conv.write_text(CONV_DRAFT)
    gemms.write_text(TWO_GEMMS)
    return run_json_script(SCRIPT, out, conv, gemms, out)


def test_past_a_networks_clock_no_convolution_or_gemm_is_timed(script_result):
    got = script_result
    operator, network = got["operator"], got["network spent"]
    # an operator's draft times its sites (the control: the same sources, the same timer)
    assert operator["conv_labels"] and operator["tile_labels"]
    # past a network's clock: nothing timed, a note per site saying why; the GEMMs kept as
    # written, the convolutions written with the fixed tile they ran at (no autotuning)
    assert network["conv_labels"] == [] and network["tile_labels"] == []
    assert network["tiles_same"] and not network["conv_same"]
    written = network["conv_source"].count("num_stages=") - CONV_DRAFT.count("num_stages=")
    assert written == 3, network["conv_notes"]
    assert sum("pinned (the fixed one it ran at)" in n for n in network["conv_notes"]) == 3
    conv_notes = [n for n in network["conv_notes"] if "speed choices at draft time were spent" in n]
    assert len(conv_notes) == 3, network["conv_notes"]  # three convolution sites
    tile_notes = [n for n in network["tile_notes"] if "speed choices at draft time were spent" in n]
    assert len(tile_notes) == 2, network["tile_notes"]  # two GEMM sites


def test_a_networks_convolutions_are_written_with_their_autotuned_tiles(script_result):
    """The third run of SCRIPT: each site's tile (here a scripted autotuner's) written into its
    call, so the jobs that run the candidate compile one tile a layer."""
    got = script_result["network running"]
    assert len(got["pinned_calls"]) == 3  # each site run once as picked, no tile of its own
    assert all(keys == [] for keys in got["pinned_calls"])
    for width in (48, 64, 80):
        assert f"BLOCK_N={width}" in got["source"], width
    assert sum("pinned (the autotuner's)" in n for n in got["notes"]) == 3, got["notes"]


def test_autotuned_tile_reads_the_config_a_call_tuned():
    import triton
    import triton.language as tl

    from tools.draft.conv_pins import autotuned_tile

    @triton.jit
    def kernel(X, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pass

    config = triton.Config({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16}, num_warps=4, num_stages=3)
    tuned = triton.autotune(configs=[config], key=["X"])(kernel)

    def tuning_call(key):
        def real(*args, **kwargs):
            tuned.cache[key] = config  # what Autotuner.run does after benchmarking
            return "out"

        return real

    tile, out = autotuned_tile([tuned], tuning_call((1,)), (), {})
    assert out == "out"
    assert tile == {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16, "num_warps": 4, "num_stages": 3}
    # a key tuned already (an earlier layer's): nothing new to read, the call stays autotuned
    assert autotuned_tile([tuned], tuning_call((1,)), (), {}) == ({}, "out")
    # a config without the convolution's tile keys is not a tile to pin
    odd = triton.Config({"XBLOCK": 128}, num_warps=4, num_stages=1)

    def other(*args, **kwargs):
        tuned.cache[(2,)] = odd
        return "out"

    assert autotuned_tile([tuned], other, (), {}) == ({}, "out")


def test_past_a_networks_clock_a_call_takes_the_pick_of_its_kind(script_result):
    """The fourth run of SCRIPT: the wide 3x3 convolution is timed (exact X_SPLIT wins), then
    the clock runs out; the stem 3x3 (another size, the same kind) takes that pick untimed, the
    depthwise call (another kind) stays as written."""
    got = script_result["network runs out"]
    notes = "\n".join(got["notes"])
    assert "conv#0 (1x16x5x6 * 20x16x3x3): precision='ieee', X_SPLIT=True picked" in notes
    assert "conv#1 (2x3x6x5 * 16x3x3x3): precision='ieee', X_SPLIT=True, as conv#0" in notes
    depthwise = next(n for n in got["notes"] if n.startswith("conv#2"))
    assert "speed choices at draft time were spent" in depthwise, depthwise
    assert got["source"].count("X_SPLIT=True") - CONV_DRAFT.count("X_SPLIT=True") == 2
