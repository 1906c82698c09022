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
                  "tile_labels": list(labels), "tile_notes": tile_notes, "tiles_same": tiles == gemms}
json.dump(out, open(sys.argv[3], "w"))
"""


def test_past_a_networks_clock_no_convolution_or_gemm_is_timed(tmp_path):
    conv, gemms, out = tmp_path / "conv.py", tmp_path / "gemms.py", tmp_path / "out.json"
    conv.write_text(CONV_DRAFT)
    gemms.write_text(TWO_GEMMS)
    got = run_json_script(SCRIPT, out, conv, gemms, out)
    operator, network = got["operator"], got["network spent"]
    # an operator's draft times its sites (the control: the same sources, the same timer)
    assert operator["conv_labels"] and operator["tile_labels"]
    # past a network's clock: nothing timed, the sources kept, a note per site saying why
    assert network["conv_labels"] == [] and network["tile_labels"] == []
    assert network["conv_same"] and network["tiles_same"]
    conv_notes = [n for n in network["conv_notes"] if "speed choices at draft time were spent" in n]
    assert len(conv_notes) == 3, network["conv_notes"]  # three convolution sites
    tile_notes = [n for n in network["tile_notes"] if "speed choices at draft time were spent" in n]
    assert len(tile_notes) == 2, network["tile_notes"]  # two GEMM sites
