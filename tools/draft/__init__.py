"""The compiler drafter: a KernelBench problem in, a standalone Triton candidate out.

It runs TorchInductor (`torch.compile(backend="inductor")`) on the problem's `Model`, captures the
Python wrapper Inductor generates, and rewrites it into a candidate file that needs only `torch`
and `triton`: plain `@triton.jit` kernels, a `call(args)` host function that allocates buffers and
launches them with fixed block sizes and grids, and a `ModelNew` whose `forward` reads its
parameters from `self` and calls `call`. KernelLLM's training pairs were made the same way.

Every use of PyTorch internals in the product lives in this package (see
docs/compiler-drafter.md for the list and the versions tested). `check_torch_support()` refuses
torch versions whose internals do not match with a `ShimError` that says what is missing.

Two devices:
- `device="cuda"`: Inductor's own CUDA path, run for real; block sizes are the ones Inductor's
  autotuner picked, GEMMs come from Inductor's Triton templates (autotuned).
- `device="cpu"`: no GPU and no Triton CPU backend. Inductor is told to emit Triton for CPU
  tensors (`cpu_backend="triton"`), a stand-in Triton driver reports a CUDA target so codegen can
  ask for one, and compilation stops as soon as the wrapper source exists (nothing is compiled
  or run). Block sizes are the first config of Inductor's launch heuristics, GEMMs the first
  Triton template choice (no benchmarking), and `libdevice` calls, which the Triton interpreter
  cannot run, are rewritten to `tl` expressions. The result runs under `TRITON_INTERPRET=1`.

`draft_candidate` is meant to run inside a throwaway sandboxed worker: it changes Inductor config
and monkeypatches Inductor for the duration of the call (restored afterwards, so a test can call
it several times in one process).

The modules, in the order a draft goes through them:
- `loading`: the problem executed, its Model and inputs built (`LoadedProblem`);
- `settings`, `inductor_patches`, `capture`: Inductor run under the drafter's config and patches,
  its wrapper captured;
- `kernels` (with `interp`, the interpreter's rewrites) and `grids`: kernel sources and launches;
- `rewrite`: the host code; `state`: plain tensor attributes forward reads (put where the graph
  takes them, stored back); `assemble`: the candidate file;
- `job`: `draft_candidate`, the sandbox job `draft_job`, the command line; `result`: `DraftResult`;
  `support`: the torch version check.
"""

from tools.draft.job import draft_candidate, draft_job, main
from tools.draft.result import LIBRARY_CALLS_ALLOWED, DraftResult, DraftUnsupportedError
from tools.draft.settings import SETTINGS, alternative_settings
from tools.draft.support import MIN_TORCH, TESTED_TORCH, check_torch_support

__all__ = [
    "LIBRARY_CALLS_ALLOWED",
    "MIN_TORCH",
    "SETTINGS",
    "TESTED_TORCH",
    "DraftResult",
    "DraftUnsupportedError",
    "alternative_settings",
    "check_torch_support",
    "draft_candidate",
    "draft_job",
    "main",
]
