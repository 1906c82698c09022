"""On a GPU the run's baselines are the ones its first timed attempt measured (eager and
torch.compile, timed in the same process as the candidate), not "not timed"."""

from __future__ import annotations

from agent.nodes import baselines_from


def test_baselines_come_from_the_first_timed_attempt():
    untimed = {"index": 0, "profile": None}
    failed = {"index": 1, "profile": {"status": "not_verified", "eager": None}}
    timed = {
        "index": 2,
        "profile": {
            "device": "NVIDIA H200",
            "eager": {"median_ms": 0.0105},
            "compiled": {"median_ms": 0.0057},
            "baselines_cached": True,
        },
    }
    assert baselines_from([untimed, failed]) is None
    got = baselines_from([untimed, failed, timed])
    assert got == {
        "available": True,
        "device": "NVIDIA H200",
        "eager_ms": 0.0105,
        "compile_ms": 0.0057,
        "cached": True,
        "timed_in": "attempt 2's timing job",
    }
