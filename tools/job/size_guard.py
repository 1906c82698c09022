"""Work too large for the Triton interpreter on the CPU, refused before it runs for minutes.

- **The problem** (`estimate_work`, `too_large_message`): elements moved and FLOPs of one forward,
  counted from shapes alone (fake tensors) before anything is allocated; past the limits the
  problem is refused.
- **Each launch** (`LaunchBudget`): the interpreter runs a launch's programs one after another,
  so its time is the number of programs (the grid's product) times the cost of one. Known at
  the launch: the grid, checked at once against a floor cost a program, then the cost measured
  on the launch's first programs. A launch estimated past the limit is refused with a message
  naming the grid, programs and estimate; a long one below it logs progress lines.

These run ONLY inside sandbox job processes. See docs/verification.md.
"""

from __future__ import annotations

import os
import sys
import time
import types
from typing import Any

import torch

from tools.checks.compare import normalise_outputs

CPU_MAX_ELEMENTS = 1 << 24  # elements read + written by one forward (64 MiB of fp32)
CPU_MAX_FLOPS = 2e9


def too_large_message(moved: int, flops: float) -> str:
    """Why a problem is refused on the CPU. Reductions, norms and softmax count 0 FLOPs in
    torch's FLOP counter: the message then says they were not counted, not "0 FLOPs"."""
    work = f"does {flops:.3g} FLOPs" if flops else "(its FLOPs are not counted for these ops)"
    return (
        f"too large for the Triton interpreter on the CPU: one forward moves {moved:,} elements "
        f"and {work} (limits: {CPU_MAX_ELEMENTS:,} elements, {CPU_MAX_FLOPS:.0e} FLOPs); it "
        "would run for hours. Shrink the size constants, run on a GPU, or pass --allow-large "
        "to try anyway."
    )


def estimate_work(mod: types.ModuleType) -> dict[str, Any]:
    """Sizes, bytes and FLOPs of one forward, from shapes alone: the model, its inputs and the
    forward run under a FakeTensorMode on the meta device, so nothing is allocated, even for a
    tensor created with an explicit `device="cpu"` (which the meta device alone would
    allocate for real: KernelBench's 6.4 GB inputs)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils.flop_counter import FlopCounterMode

    est: dict[str, Any] = {"input_elements": None, "output_elements": None, "flops": None}
    try:
        with torch.device("meta"), FakeTensorMode(allow_non_fake_inputs=True):
            inputs = list(mod.get_inputs())
            tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
            est["input_elements"] = sum(t.numel() for t in tensors)
            est["input_bytes"] = sum(t.numel() * t.element_size() for t in tensors)
            model = mod.Model(*mod.get_init_inputs())
            with torch.no_grad(), FlopCounterMode(display=False) as fc:
                out = normalise_outputs(model(*inputs))
            est["output_elements"] = sum(t.numel() for t in out if isinstance(t, torch.Tensor))
            est["flops"] = int(fc.get_total_flops())
    except Exception as exc:  # not every op runs on shapes alone; the estimate is best-effort
        est["error"] = f"{type(exc).__name__}: {exc}"
    return est


# ------------------------------------------------------------------------------------------
# Each launch: programs x the cost of one.

ALLOW_LARGE_ENV = "TRITON_AGENT_ALLOW_LARGE"
"""`1` lifts the CPU limits in the jobs (the CLI's `--allow-large` sets it before any job starts;
the launch check reads it in the candidate's job, which inherits the agent's environment)."""

LAUNCH_LIMIT_S = 30.0
"""An interpreted launch estimated past this is refused. A verification runs forward at least 11
times (5 trials x 2 runs and an unannounced one), so one 30 s launch makes more than 5 minutes,
past the default `--timeout` of 180 s: the job would have been killed after minutes of silence."""

FLOOR_S_PER_PROGRAM = 1e-4
"""The least one interpreted program costs, for the check at the launch, before any program ran.
Measured with Triton 3.9 on the 2-core CPU machine the tests run on (2026-11-30): a program that
loads and stores one block costs 1.1-1.4 ms (4096 programs of BLOCK 1, 64 and 1024: 4.6-5.8 s a
launch). The floor is 10x below that, so a faster machine is refused on its own measured cost,
not on this constant."""

MEASURE_PROGRAMS = 4
MEASURE_S = 1.0
"""The cost of a program is measured on the launch's first MEASURE_PROGRAMS programs, or on as
many as ran in MEASURE_S (a slow program is not run four times before the estimate)."""

PROGRESS_ABOVE_S = 10.0
PROGRESS_EVERY_S = 15.0
"""A launch estimated past PROGRESS_ABOVE_S logs a line when estimated, then one every
PROGRESS_EVERY_S (programs done, elapsed, time left)."""


class TooSlowForInterpreter(BaseException):
    """A launch refused by its estimate. A BaseException: the interpreter wraps an Exception
    raised inside a launch (InterpreterError), and a candidate's `except Exception` must not
    swallow the refusal and fall back to something else."""


def allow_large() -> bool:
    return os.environ.get(ALLOW_LARGE_ENV, "").strip().lower() in ("1", "true", "yes")


class LaunchBudget:
    """Estimates each interpreted launch from its grid; refuses one past `limit_s` (None: no
    limit, progress lines only). `refused` holds the message once a launch was refused; `slow`
    the long launches seen (for the verdict's notes)."""

    def __init__(
        self,
        limit_s: float | None = LAUNCH_LIMIT_S,
        *,
        clock: Any = time.perf_counter,
        log: Any = None,
    ) -> None:
        self.limit_s = limit_s
        self.clock = clock
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.refused: str | None = None
        self.slow: list[str] = []
        self.new_launch((0, 1, 1))

    def new_launch(self, grid: tuple[int, ...], kernel: str = "kernel") -> None:
        self.grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        self.programs = self.grid[0] * self.grid[1] * self.grid[2]
        self.kernel = kernel
        self.started = 0
        self.t0 = 0.0
        self.estimated = False
        self.next_log = float("inf")
        floor = self.programs * FLOOR_S_PER_PROGRAM
        if self.limit_s is not None and floor > self.limit_s:
            self._refuse(FLOOR_S_PER_PROGRAM, floor)

    def program(self) -> None:
        """Called as each program of the launch starts."""
        self.started += 1
        now = self.clock()
        if self.started == 1:
            self.t0 = now
            return
        done, elapsed = self.started - 1, now - self.t0
        if not self.estimated:
            if done < MEASURE_PROGRAMS and elapsed < MEASURE_S:
                return
            self.estimated = True
            per = elapsed / done
            estimate = per * self.programs
            if self.limit_s is not None and estimate > self.limit_s:
                self._refuse(per, estimate)
            if estimate > PROGRESS_ABOVE_S:
                line = (
                    f"interpreter: {self.kernel} grid {self.grid} = {self.programs:,} programs, "
                    f"~{estimate:,.0f} s estimated ({per * 1e3:.2f} ms a program)"
                )
                self.log(line)
                self.slow.append(line)
                self.next_log = now + PROGRESS_EVERY_S
        elif now >= self.next_log:
            left = (self.programs - done) * elapsed / done
            self.log(
                f"interpreter: {self.kernel} {done:,}/{self.programs:,} programs, "
                f"{elapsed:,.0f} s, ~{left:,.0f} s left"
            )
            self.next_log = now + PROGRESS_EVERY_S

    def _refuse(self, per: float, estimate: float) -> None:
        self.refused = (
            f"too slow for the Triton interpreter: {self.kernel}'s grid {self.grid} is "
            f"{self.programs:,} programs, ~{estimate:,.0f} s at {per * 1e3:.2f} ms a program "
            f"(limit {self.limit_s:.0f} s a launch). Use fewer, larger programs (a bigger BLOCK), "
            "a GPU, smaller sizes, or --allow-large to run it anyway"
        )
        raise TooSlowForInterpreter(self.refused)


def install_launch_budget(builder: Any = None) -> LaunchBudget:
    """Estimate every launch of the Triton interpreter in this job (wraps the interpreter
    builder's `set_grid_dim` and `set_grid_idx`, whatever already wraps them)."""
    if builder is None:
        from triton.runtime.interpreter import interpreter_builder as builder
    budget = LaunchBudget(None if allow_large() else LAUNCH_LIMIT_S)
    set_dim, set_idx = builder.set_grid_dim, builder.set_grid_idx

    def set_grid_dim(nx: int, ny: int, nz: int) -> None:
        # the caller is GridExecutor.__call__: its kernel's name, for the messages
        gx = sys._getframe(1).f_locals.get("self")
        budget.new_launch((nx, ny, nz), getattr(getattr(gx, "fn", None), "__name__", "kernel"))
        return set_dim(nx, ny, nz)

    def set_grid_idx(x: int, y: int, z: int) -> None:
        budget.program()
        return set_idx(x, y, z)

    builder.set_grid_dim = set_grid_dim
    builder.set_grid_idx = set_grid_idx
    return budget
