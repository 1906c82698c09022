"""The job stops the op profiler after forward and its ExitStack stops it again: the second stop
must change nothing (it used to fail and print a profiler warning into every job's stderr)."""

from __future__ import annotations

import torch

from tools.checks.op_profiler import ProfilerObserver


def test_stopping_the_observer_twice_keeps_its_record():
    o = ProfilerObserver()
    with o:
        with o.forward():
            torch.ones(3) + 1
        o.__exit__(None, None, None)
        first = o.ops()
    assert first == (["aten.add"], [])
    assert o.ops() == first and o.exit_error is None and o.available
