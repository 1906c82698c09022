"""Where candidates come from: the LLM (first-round and refinement prompts) or the compiler
(torch.compile's Triton, rewritten into a standalone ModelNew)."""

from __future__ import annotations

from typing import Any

from agent.config import AgentConfig
from agent.extract import extract_code
from agent.prompts import (
    problem_at_precision,
    render_chat,
    render_kernelllm,
    render_refinement,
)
from agent.state import Attempt, Candidate
from tools.core.errors import BackendError
from tools.core.problem_dtype import DEFAULT_PRECISION, PRECISION_ENV, cache_suffix
from tools.sandboxing.limits import Limits
from tools.sandboxing.sandbox import Sandbox

# Rank of statuses when choosing which attempt of a round to refine: closest to done first.
_PROGRESS = {
    "ok": 0,
    "slower": 1,
    "mismatch": 2,
    "shape_mismatch": 3,
    "runtime_error": 4,
    "policy": 5,
    "cheat": 6,
    "compile_error": 7,
    "crash": 8,
    "timeout": 9,
    "resource": 10,
    "syntax_error": 11,
    "bad_input": 12,
}


def prompt_format(config: AgentConfig, backend: Any) -> str:
    if config.prompt_format != "auto":
        return config.prompt_format
    return getattr(backend, "kind", "completion") or "completion"


def first_prompt(problem_source: str, config: AgentConfig, backend: Any) -> Any:
    problem_source = problem_at_precision(problem_source, config.precision)  # says the dtype
    if prompt_format(config, backend) == "chat":
        return render_chat(problem_source)
    return render_kernelllm(problem_source, config.prompt_template)


def refinement_prompt(
    problem_source: str,
    attempts: list[Attempt],
    best: Attempt | None,
    config: AgentConfig,
    backend: Any,
    last_round: int,
) -> Any:
    """The next prompt: the most promising attempt of the last round, its evidence, the best
    kernel so far and a one-line history of everything before."""
    problem_source = problem_at_precision(problem_source, config.precision)  # says the dtype
    recent = [a for a in attempts if a["round"] == last_round] or attempts[-1:]
    previous = min(recent, key=lambda a: (_PROGRESS.get(a["status"], 99), -a["index"]))
    history = [
        (a["status"], f"attempt {a['index']}: {a['summary']}")
        for a in attempts
        if a is not previous
    ]
    best_summary = None
    if best is not None:
        best_summary = best["summary"]
        if best["source"] == "compiler":
            best_summary = (
                "compiler-generated (torch.compile's Triton), the version to beat: "
                + best["summary"]
            )
    return render_refinement(
        problem_source,
        previous_code=previous["code"] or "(the previous reply contained no usable code)",
        feedback=previous["feedback"],
        history=history,
        best_code=best["code"] if best else None,
        best_summary=best_summary,
        fmt="chat" if prompt_format(config, backend) == "chat" else "completion",
    )


def draft_llm(backend: Any, prompt: Any, k: int, config: AgentConfig) -> list[Candidate]:
    """k samples for one prompt; raises BackendError when the backend fails for good."""
    replies = backend.generate(
        prompt,
        n=k,
        temperature=config.temperature,
        top_p=config.top_p,
        max_tokens=config.max_tokens,
    )
    if not replies:
        raise BackendError("the LLM backend returned no replies")
    name = getattr(backend, "name", None) or config.model or "llm"
    return [
        Candidate(source=f"llm:{name}", prompt=prompt, response=r, code=extract_code(r or ""))
        for r in replies[:k]
    ]


class CompilerDrafter:
    """torch.compile/Inductor's Triton as a candidate (tools.draft), run in a sandbox job:
    the problem's code executes there, and Inductor's internals may be patched freely."""

    def __init__(
        self, sandbox: Sandbox, device: str, timeout_s: float = 600.0, generalize: bool = False
    ):
        # The verifier's precision (`--precision`) is in its sandbox's job environment: the
        # draft job traces the model at that dtype (`tools.draft.loading.load_problem`).
        job_env = dict(getattr(sandbox, "job_env", {}))
        if device == "cpu":
            # Inductor needs real Triton objects: a CPU sandbox runs the interpreter, so drafting
            # gets its own spawn-based sandbox without TRITON_INTERPRET (one job per run).
            sandbox = Sandbox(device="cpu", max_workers=1, start_method="spawn", interpret=False)
            sandbox.job_env = job_env
        self.precision = job_env.get(PRECISION_ENV, DEFAULT_PRECISION)
        """The dtype drafts are traced at (part of the draft cache's key)."""
        self.sandbox = sandbox
        self.device = device
        self.timeout_s = timeout_s
        self.sizes = "dynamic" if generalize else "auto"
        """The draft job's `sizes` (`tools.draft.job.draft_job`): "auto" drafts a network at the
        problem's sizes; a run that verifies other sizes (`--generalize`) drafts every problem
        with symbolic ones."""

    def draft(
        self,
        problem_source: str,
        problem_path: str,
        *,
        gpu_mb: float | None = None,
        settings: str = "default",
    ) -> Candidate:
        """The compiler's candidate for a problem: from the draft cache when this problem was
        drafted before on this device with these versions, else drafted now and cached.
        Failures are not cached. `gpu_mb`: the device memory the draft is expected to take
        (the problem's footprint); see `_draft` for what it changes. `settings`: other
        Inductor settings (`tools.draft.SETTINGS`), for the tuner."""
        key = draft_cache_key(
            problem_source,
            self.device
            + ("" if settings == "default" else f":{settings}")
            + ("" if self.sizes == "auto" else f":sizes={self.sizes}")
            + cache_suffix(self.precision),
        )
        cached = _read_draft(key)
        if cached is not None:
            return cached
        cand = self._draft(problem_source, problem_path, gpu_mb, settings)
        if cand["code"]:
            _write_draft(key, cand)
        return cand

    def _draft(
        self,
        problem_source: str,
        problem_path: str,
        gpu_mb: float | None,
        settings: str = "default",
    ) -> Candidate:
        """One draft job. Inductor's autotuning times kernels on the GPU, so on a GPU with one
        slot (optimize, repair) the draft has it alone. Where several jobs share a GPU (bench's
        `--jobs-per-gpu`) and the caller says how much memory the draft needs, it shares the GPU
        like a verification job: a draft holding the GPU alone stopped every other job of that
        GPU for 10-76 s a problem (KernelBench on the H200, session 4), most of a bench's time.
        Its autotuner may then pick a config under interference; the candidate's timing is still
        done alone: a timing job stops (SIGSTOP) the shared drafts of its GPU for its run rather
        than wait minutes for them (`tools.sandboxing.slots.Pausable`). An out-of-memory in a shared draft
        is retried alone."""
        shared = self.device == "cuda" and gpu_mb is not None and self.sandbox.jobs_per_gpu > 1
        out = self._run_job(
            problem_source, problem_path, exclusive=not shared, gpu_mb=gpu_mb, settings=settings
        )
        if shared and _out_of_memory(out):
            out = self._run_job(
                problem_source, problem_path, exclusive=True, gpu_mb=None, settings=settings
            )
        source = "compiler" if settings == "default" else f"compiler:{settings}"
        if out.kind == "ok" and isinstance(out.value, dict) and out.value.get("source"):
            notes = out.value.get("notes") or []
            response = "compiler drafter (torch.compile -> Triton)\n" + "\n".join(notes)
            return Candidate(
                source=source, prompt=None, response=response, code=out.value["source"]
            )
        reason = (
            (out.value.get("error") if out.kind == "ok" and isinstance(out.value, dict) else None)
            or out.error
            or out.kind
        )
        return Candidate(
            source=source,
            prompt=None,
            response=f"the compiler drafter failed: {reason}\n{out.stderr_tail}",
            code=None,
        )

    def _run_job(
        self,
        problem_source: str,
        problem_path: str,
        *,
        exclusive: bool,
        gpu_mb: float | None,
        settings: str = "default",
    ) -> Any:
        from tools.draft.job import draft_job  # imported when a draft runs

        return self.sandbox.run(
            draft_job,
            problem_source,
            problem_path,
            device=self.device,
            sizes=self.sizes,
            settings=settings,
            limits=Limits(timeout_s=self.timeout_s, memory_mb=None, guard=False),
            exclusive=exclusive and self.device == "cuda",
            gpu_mb=gpu_mb,
            # a shared draft holds its slot for minutes: a timing job stops it rather than wait
            pausable=not exclusive,
        )


def _out_of_memory(out: Any) -> bool:
    from tools.core.errors import is_out_of_memory_text

    text = " ".join(
        str(x or "")
        for x in (
            out.value.get("error") if out.kind == "ok" and isinstance(out.value, dict) else "",
            out.error,
            out.stderr_tail,
        )
    )
    return is_out_of_memory_text(text)


DRAFT_CACHE_VERSION = "1"


def drafter_files() -> list[str]:
    """The files a compiler draft's text depends on besides the problem: the drafter's package,
    the Triton convolutions (each file `candidate_source` copies from), GEMM template, recurrent
    and attention kernels it copies into candidates, and the call-site rewriting it uses
    (tools/compile/tune.py)."""
    import glob
    import os

    from tools import draft
    from tools.compile import tune
    from tools.kernels import attention_kernels, gemm_template, recurrent_kernels, triton_conv

    package = os.path.dirname(draft.__file__)
    copied = [
        *triton_conv.source_files(),
        gemm_template.__file__,
        recurrent_kernels.__file__,
        attention_kernels.__file__,
        tune.__file__,
    ]
    return sorted(glob.glob(os.path.join(package, "*.py"))) + copied


def draft_cache_key(problem_source: str, device: str) -> str:
    """What a compiler draft depends on: the problem's text, the device kind, torch and Triton
    (Inductor's code generation), and the drafter's own code (`drafter_files`: a cached draft
    with an older GEMM template or convolution kernel is not reused)."""
    import hashlib

    import torch
    import triton

    try:
        digest = hashlib.sha256()
        for path in drafter_files():
            with open(path, "rb") as f:
                digest.update(f.read())
        drafter = digest.hexdigest()[:16]
    except OSError:
        drafter = "unknown"
    parts = (DRAFT_CACHE_VERSION, device, torch.__version__, triton.__version__, drafter)
    text = "\0".join(parts) + "\0" + problem_source
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _draft_path(key: str):
    from tools.core.cache import cache_dir

    return cache_dir() / "drafts" / f"{key}.json"


def _read_draft(key: str) -> Candidate | None:
    from tools.core.cache import read_json

    data = read_json(_draft_path(key))
    if not isinstance(data, dict) or not isinstance(data.get("code"), str):
        return None
    response = str(data.get("response", "compiler drafter (torch.compile -> Triton)"))
    return Candidate(
        source="compiler",
        prompt=None,
        response=response + "\n(from the draft cache)",
        code=data["code"],
    )


def _write_draft(key: str, cand: Candidate) -> None:
    from tools.core.cache import write_json

    write_json(_draft_path(key), {"code": cand["code"], "response": cand["response"]})
