"""What a verification is asked to do: its options (`VerifyOptions`) and their rows of the option
table (`VERIFY_OPTIONS`: defaults, ranges, choices, help; `Option.check`, the one check of each
value), the device it runs on, and the trials it sends (the documented ones, the scale trials,
the unannounced ones). Plain data and small functions: no jobs run here."""

from __future__ import annotations

import math
import os
import secrets
from dataclasses import dataclass, field, fields

from tools.checks.compare import PRESETS, Tolerance
from tools.compile.cuda_targets import DEFAULT_TARGET
from tools.core.errors import BadInputError
from tools.core.problem_dtype import DEFAULT_PRECISION, PRECISIONS
from tools.orchestrate.option_spec import Option
from tools.orchestrate.reference import REFERENCE_NUMERICS
from tools.sandboxing.limits import DEFAULT_TIMEOUT_S, HOST_FLOOR_MB

POLICIES = ("strict", "allow-library")
DEVICES = ("auto", "cpu", "cuda")

SCALE_TRIALS: tuple[float, ...] = (100.0,)
"""The scale trials of every verification under the default fp32 contract (issue 35): "correct"
holds at the scales a user feeds, not only at randn's. x100 makes `atol` (1e-4) negligible
against the outputs, so the test becomes relative: a bf16x3 convolution within the tolerance on
randn inputs had 1.7% of its outputs outside it at x100 (13x fp32's error), and a kernel that
agrees with the problem only inside randn's range (a ReLU that also clamps at 6, a softmax or
tanh without its overflow guard, an approximation fitted on [-5, 5]) is wrong there. Honest fp32
kernels stay within it: their error is relative too, and an element whose reference cancels is
judged by the fp64 rule as on any trial. A positive factor keeps every sign (inputs that must
stay positive do); scaling is exact for a power of two, so 100 also moves the mantissas. One
trial costs what a documented one does (its reference and two runs): on the CPU examples, 6-11%
of a verification's wall time (benchmarks/results/scale_trials_cost_cpu.md). No shifted trial
(+3, issue 35), measured (benchmarks/results/offset_trials_cpu.md, kernels emulated on the CPU):
a scale keeps the inputs' mean/spread ratio and only an offset moves it, yet +3 on randn refused
none of the kinds x100 passes (a one-pass E[x^2] - E[x]^2 variance fails only at +100; a
softmax without its max subtraction fails at x100, not at +3; a bf16x3 dot misses more at x100,
3.3%, than at +3, 0.6%). Mean-dependent cancellation shows at offsets of tens of spreads, which
would need a trial drawn from each input's own spread and a shift carried by the jobs' trial
message (`tools.job.job_common.make_inputs` takes one factor); not done. Shifted inputs are tried
by the drafter's bf16x3 gate (`tools.draft.conv_picks.GATE_INPUTS`) and by the profile's
re-verification of an implausible speedup (`tools.orchestrate.profile.RESCALED_INPUTS`)."""

SCALE_TRIALS_MAX_OUTPUT_BYTES = 128 << 20
"""Outputs (a trial's, all together) up to which the scale trials run: the fp64 rule, which
judges the elements whose reference cancels, holds whole fp64 outputs up to this size only
(`tools.job.judge.PRECISION_MAX_BYTES` / 2). At x100 `atol` no longer covers an honest fp32
kernel's rounding where an element cancels (a 256 x 1024 x 256 GEMM summed in another order
than PyTorch's: 0.13% of its elements outside the tolerance at x100, none at x1; CPU), so
without the rule an honest kernel would fail there: larger problems get no scale trial, and
the verdict says so (a scale trial on rows of the batch, as the precision sample does, would
lift this)."""


@dataclass(kw_only=True)
class VerifyOptions:
    trials: int = 5
    seed: int = 42
    tolerance: Tolerance = field(default_factory=Tolerance)
    policy: str = "strict"
    """`strict`: all compute in Triton. `allow-library`: library matmul/conv calls allowed, the
    verdict is marked mixed and lists them."""
    device: str = "auto"
    timeout_s: float = DEFAULT_TIMEOUT_S
    aot_target: str | None = DEFAULT_TARGET
    """On CPU, also compile each launched kernel for this CUDA target (None to skip)."""
    allow_large: bool = False
    poison: bool = True
    memory_mb: int | None = None
    """Host memory limit of each job in MB; None derives it from the problem's footprint."""
    input_scales: tuple[float, ...] | str | None = None
    """The scale trials: one more trial per factor, with the floating-point tensors of
    `get_inputs()` multiplied by it (integer and bool tensors and plain numbers as drawn), the
    reference run on the same scaled inputs. None: the contract's own (`scale_trials`):
    `SCALE_TRIALS` under the default fp32 contract, none under the `kernelbench-v0` preset
    (KernelBench's own check, kept comparable); `()` turns them off. A string is the command
    line's spelling (`--input-scales`, `parse_input_scales`)."""

    jobs_per_gpu: int = 1
    """On CUDA: verification jobs running at once on each GPU (they only check correctness;
    timing jobs still have their GPU alone, `Sandbox.run(exclusive=True)`)."""

    generalize: bool = False
    """Generalisation check over sizes: after passing at the problem's own sizes, verify again
    with its integer size constants changed (`generalization_sizes`). Catches kernels with
    shapes baked in (the compiler drafter's, for one)."""

    reference_numerics: str = "exact"
    """What the reference computes in (`tools.orchestrate.reference.REFERENCE_NUMERICS`): `exact`, full fp32
    with TF32 off; `pytorch-default`, PyTorch's defaults on a GPU (TF32 convolutions), as
    KernelBench's judge runs it. The verdict says which (`Verdict.reference_numerics`)."""

    precision: str = DEFAULT_PRECISION
    """The dtype the problem runs at, KernelBench's meaning (`tools.core.problem_dtype.PRECISIONS`):
    `fp32` as written; `bf16` / `fp16`: the model's floating parameters and buffers and its
    floating inputs cast, for the reference and the candidate alike (the jobs read it from their
    environment, `tools.core.problem_dtype.PRECISION_ENV`). The verdict says which
    (`Verdict.precision`)."""

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        tolerance = self.tolerance
        values.update(atol=tolerance.atol, rtol=tolerance.rtol, tolerance_preset=tolerance.preset)
        for option in VERIFY_OPTIONS:  # every range and choice: the option table's rows
            option.check(values[option.name])
        if isinstance(self.input_scales, str):
            self.input_scales = parse_input_scales(self.input_scales)
        if self.input_scales is not None:
            self.input_scales = tuple(float(x) for x in self.input_scales)
            bad = [x for x in self.input_scales if not (math.isfinite(x) and x > 0)]
            if bad:
                raise BadInputError(
                    f"input scale {bad[0]:g}: scales must be finite and positive (a sign flip "
                    "or zero would change what the problem's inputs mean: rand() must stay "
                    "positive, a log's argument too)"
                )

    def scale_trials(self) -> tuple[float, ...]:
        """The factors of this verification's scale trials (`input_scales`, or the contract's
        default where it is None: the fp32 contract's; none at bf16/fp16, whose tolerance is
        KernelBench's 1e-2 at the reference's own dtype: at x100 its atol no longer covers an
        honest kernel that rounds intermediates where eager PyTorch does not)."""
        if self.input_scales is not None:
            return self.input_scales
        fp32_contract = self.tolerance.preset == "default" and self.precision == "fp32"
        return SCALE_TRIALS if fp32_contract else ()


_DEFAULTS = {f.name: f.default for f in fields(VerifyOptions)}

VERIFY_OPTIONS: tuple[Option, ...] = (
    Option(name="trials", group="verify", type=int, default=_DEFAULTS["trials"], low=1, high=1000,
           help="random input sets to compare"),
    Option(name="atol", group="verify", type=float, default=None, nullable=True, low=0,
           help="absolute tolerance (default per dtype)"),
    Option(name="rtol", group="verify", type=float, default=None, nullable=True, low=0,
           help="relative tolerance (default per dtype)"),
    Option(name="tolerance_preset", group="verify", type=str, default=Tolerance().preset,
           choices=tuple(PRESETS),
           help="default: fp32 1e-4, fp16/bf16 1e-2; kernelbench-v0: 1e-2 for everything"),
    Option(name="reference_numerics", group="verify", type=str,
           default=_DEFAULTS["reference_numerics"], choices=REFERENCE_NUMERICS,
           help="exact: the reference in full fp32 (TF32 off); pytorch-default: as PyTorch runs "
           "it by default on a GPU (TF32 convolutions), as KernelBench's judge does: a weaker ok"),
    Option(name="precision", group="verify", type=str, default=_DEFAULTS["precision"],
           choices=PRECISIONS,
           help="the dtype the problem runs at, KernelBench's meaning: fp32 as written; bf16/fp16: "
           "the model and its floating inputs cast, reference and candidate alike (tolerance "
           "1e-2), baselines timed at it, the compiler drafter tracing at it"),
    Option(name="policy", group="verify", type=str, default=_DEFAULTS["policy"], choices=POLICIES,
           help="strict: all compute in Triton; allow-library: library matmul/conv calls "
           "allowed (mixed)"),
    Option(name="device", group="verify", type=str, default=_DEFAULTS["device"],
           choices=DEVICES, help="where candidates run"),
    Option(name="timeout_s", group="verify", type=float, default=_DEFAULTS["timeout_s"], low=0,
           low_open=True, flag="--timeout", help="seconds per candidate job"),
    Option(name="aot_target", group="verify", type=str, default=_DEFAULTS["aot_target"],
           nullable=True, flag="--target",
           help="on CPU, also compile kernels ahead of time for this CUDA target ('none' to skip)"),
    Option(name="seed", group="verify", type=int, default=_DEFAULTS["seed"], low=0,
           help="seed of the first trial's inputs"),
    Option(name="allow_large", group="verify", type=bool, default=_DEFAULTS["allow_large"],
           help="run problems the CPU interpreter would take very long on, instead of "
           "refusing them"),
    Option(name="memory_mb", group="verify", type=int, default=_DEFAULTS["memory_mb"], nullable=True,
           low=1024, help="host memory limit of each verification job in MB (default: derived "
           f"from the problem's measured footprint, at least {HOST_FLOOR_MB})"),
    Option(name="generalize", group="verify", type=bool, default=_DEFAULTS["generalize"],
           help="also verify with the problem's size constants changed (catches hard-coded "
           "shapes)"),
    Option(name="input_scales", group="verify", type=str, default=None, nullable=True,
           help="scale trials: comma-separated factors the floating-point inputs are also "
           "verified at (e.g. 100,1e4), 'none' for none (default: x100 under the fp32 "
           "contract, none under kernelbench-v0)"),
    Option(name="jobs_per_gpu", group="verify", type=int, default=_DEFAULTS["jobs_per_gpu"], low=1,
           high=64, help="GPU: verification jobs at once per GPU; timing always has its GPU "
           "alone"),
)  # fmt: skip
"""The verification rows of the option table (`agent.options.OPTIONS` includes them, group
`verify`): declared here, beside `VerifyOptions`, which checks its values with them, so the
command line, `AgentConfig`, the API and a `VerifyOptions` built directly share one check. The
defaults are `VerifyOptions`'s own (`Tolerance`'s for the three tolerance rows)."""


NO_SCALES = ("none", "off", "")
"""`--input-scales` spellings of no scale trial at all."""


def parse_input_scales(text: str) -> tuple[float, ...] | None:
    """`--input-scales` as `VerifyOptions.input_scales`: comma-separated factors ("100",
    "100,1e4", "x100"), `none` (no scale trial) or `default` (None: the contract's own). The
    factors' range is `VerifyOptions`'s check."""
    spelled = text.strip().lower()
    if spelled == "default":
        return None
    if spelled in NO_SCALES:
        return ()
    scales = []
    for part in spelled.split(","):
        try:
            scales.append(float(part.strip().removeprefix("x")))
        except ValueError:
            raise BadInputError(
                f"--input-scales {text!r}: {part.strip()!r} is not a number; give factors "
                "separated by commas (100,1e4), none, or default"
            ) from None
    return tuple(scales)


def resolve_device(device: str) -> str:
    if device != "auto":
        if device == "cuda" and not cuda_available():
            raise BadInputError("--device cuda requested but no CUDA GPU is visible")
        return device
    return "cuda" if cuda_available() else "cpu"


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def host_memory_mb() -> int:
    """This machine's physical memory in MB (the problem check's limit before its footprint is
    known)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20)
    except (ValueError, OSError, AttributeError):
        return 64 * 1024


UNANNOUNCED_MAX_MB = 256.0
"""Problems whose tensors take more than this a trial get no unannounced trials."""


def with_unannounced_trials(
    trials: list[tuple[int, float]], plain: int
) -> tuple[list[tuple[int, float]], list[list[str]]]:
    """`trials` with one or two unannounced trials (fresh seed, one run), and the runs each
    trial gets: one right after the `plain` trials (so the calls past the documented number
    include fresh inputs: a second run of a trial repeats its inputs, where a stale output
    would still be right), and half the time one more at a random place among them. The
    candidate cannot know how many calls a verification makes nor which input set comes next,
    so a kernel correct for exactly the documented number of calls (and stale afterwards)
    fails; the verdict still counts the trials asked for."""
    out = list(trials)
    runs = [["first", "second"] for _ in trials]
    at = min(plain, len(out))
    out.insert(at, (secrets.randbits(31), 1.0))
    runs.insert(at, ["first"])
    if secrets.randbelow(2):
        at = secrets.randbelow(min(plain, len(out) - 1) + 1)
        out.insert(at, (secrets.randbits(31), 1.0))
        runs.insert(at, ["first"])
    return out, runs


UNCHECKED_MAX = 8
"""The most unchecked calls a verification makes (`unchecked_calls`): the cost's bound."""


def unchecked_calls() -> int:
    """How many unchecked forward calls (fresh inputs, every check but the comparison) come
    before the first unannounced trial's run: one, and each further one with probability 1/2
    (memoryless: however many came, another follows as likely), up to `UNCHECKED_MAX`; 2.0 on
    average. The unannounced trials' last compared call then comes at least two calls after the
    documented ones, so a kernel right for exactly the documented calls + 1 fails every time and
    one right for j more fails with probability 3 / 2^(j+1); it cannot count the calls it must
    stay right for from anything it sees (an unchecked call looks like a compared one to it).
    Drawn in the candidate's job (`tools.job.worker.candidate_job`) from `secrets` when that trial's
    message arrives, unless the parent's message says how many (`"unchecked"`)."""
    n = 1
    while n < UNCHECKED_MAX and secrets.randbelow(2):
        n += 1
    return n
