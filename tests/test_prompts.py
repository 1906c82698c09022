"""Prompt rendering: KernelLLM's completion layout, chat messages, refinement and its budget."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent.prompts import (
    FEEDBACK_MAX_CHARS,
    load_template,
    render_chat,
    render_kernelllm,
    render_refinement,
    trim_middle,
)
from tools.core.errors import BadInputError

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"

PROBLEM = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def __init__(self, scale: float) -> None:
            super().__init__()
            self.scale = scale

        def forward(self, x):
            return torch.relu(x) * self.scale  # costs $0


    N = 1023


    def get_inputs():
        return [torch.randn(N)]


    def get_init_inputs():
        return [2.0]
    """
)

INSTRUCTION = (
    "Optimize the architecture named Model with custom Triton operators! "
    "Name your optimized output architecture ModelNew."
)


# -- KernelLLM completion prompt --------------------------------------------------------------


def test_kernelllm_prompt_has_example_then_problem_then_instruction():
    prompt = render_kernelllm(PROBLEM)

    example = prompt.index("return a + b")
    launcher = prompt.index("def triton_add(")
    given = prompt.index("You are given the following architecture:")
    problem = prompt.index(PROBLEM.strip())
    instruction = prompt.index(INSTRUCTION)
    assert example < launcher < given < problem < instruction
    assert "@triton.jit" in prompt[:given]
    assert "class ModelNew(nn.Module)" in prompt[:given]
    assert prompt.rstrip().endswith("no explanations and no test code.")
    assert "$" not in prompt.replace("$0", "")  # every placeholder filled, the problem's $ kept


def test_kernelllm_prompt_from_a_custom_template(tmp_path):
    template = tmp_path / "mine.txt"
    template.write_text("RULES:\n$rules\nEXAMPLE:\n${example}\nCODE:\n$problem\nPrice: $$5\n")

    prompt = render_kernelllm(PROBLEM, template_path=str(template))

    assert prompt.startswith("RULES:\n" + load_template("_rules.txt").strip())
    assert "def triton_add(" in prompt
    assert prompt.endswith("CODE:\n" + PROBLEM.strip() + "\nPrice: $5\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no placeholder at all", "no \\$problem placeholder"),
        ("$problem and $examples", "unknown placeholder.*\\$examples"),
    ],
)
def test_bad_custom_templates_are_bad_input(tmp_path, text, message):
    template = tmp_path / "bad.txt"
    template.write_text(text)
    with pytest.raises(BadInputError, match=message):
        render_kernelllm(PROBLEM, template_path=str(template))


def test_missing_custom_template_is_bad_input(tmp_path):
    with pytest.raises(BadInputError, match="cannot read prompt template"):
        render_kernelllm(PROBLEM, template_path=str(tmp_path / "absent.txt"))


def test_one_shot_example_is_a_correct_kernel():
    """The example teaches the model; it must itself pass, under the Triton interpreter."""
    import triton  # noqa: F401  (a core dependency: a broken install fails, not skips)

    blocks = re.findall(r"```\n(.*?)```", load_template("_example_add.txt"), re.DOTALL)
    assert len(blocks) == 2
    model_src, model_new_src = blocks
    script = textwrap.dedent(
        f"""
        import torch
        ns_ref, ns_new = {{}}, {{}}
        exec({model_src!r}, ns_ref)
        exec({model_new_src!r}, ns_new)
        a, b = ns_ref["get_inputs"]()
        expected = ns_ref["Model"]()(a, b)
        got = ns_new["ModelNew"]()(a, b)
        torch.testing.assert_close(got, expected)
        print("ok")
        """
    )
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ok"


# -- chat -------------------------------------------------------------------------------------


def test_chat_prompt_is_system_plus_user():
    messages = render_chat(PROBLEM)

    assert [m["role"] for m in messages] == ["system", "user"]
    user = messages[1]["content"]
    assert PROBLEM.strip() in user
    assert INSTRUCTION in user
    assert load_template("_rules.txt").strip() in user
    assert "def triton_add(" in user


def test_rules_live_in_one_partial_only():
    rule = "masks its loads and stores"
    holders = [p.name for p in PROMPTS_DIR.glob("*.txt") if rule in p.read_text()]
    assert holders == ["_rules.txt"]


# -- refinement -------------------------------------------------------------------------------

PREVIOUS = "import triton\n\nclass ModelNew:\n    pass  # previous attempt\n"
BEST = "import triton\n\nclass ModelNew:\n    pass  # best so far\n"
FEEDBACK = "compile_error at line 3:\n    tl.load(x_ptr + offs)\n    ^ offs is not defined"


def test_refinement_carries_code_feedback_best_and_history():
    prompt = render_refinement(
        PROBLEM,
        previous_code=PREVIOUS,
        feedback=FEEDBACK,
        history=[("compile_error", "offs undefined"), ("mismatch", "tail\nblock wrong")],
        best_code=BEST,
        best_summary="correct, 1.3x over eager",
    )
    assert isinstance(prompt, str)
    for part in (PROBLEM.strip(), PREVIOUS.strip(), FEEDBACK, BEST.strip()):
        assert part in prompt
    assert "correct, 1.3x over eager" in prompt
    assert "- attempt 1: compile_error: offs undefined" in prompt
    assert "- attempt 2: mismatch: tail block wrong" in prompt
    assert prompt.index(PREVIOUS.strip()) < prompt.index(FEEDBACK) < prompt.index(INSTRUCTION)


def test_refinement_does_not_repeat_a_best_kernel_equal_to_the_previous_one():
    prompt = render_refinement(
        PROBLEM,
        previous_code=PREVIOUS,
        feedback="slower: 0.8x",
        history=[],
        best_code=PREVIOUS,
        best_summary="compiler-generated baseline, the version to beat",
    )
    assert prompt.count(PREVIOUS.strip()) == 1
    assert "The previous attempt is the best kernel so far" in prompt


def test_refinement_chat_format():
    messages = render_refinement(
        PROBLEM, previous_code=PREVIOUS, feedback=FEEDBACK, history=[], fmt="chat"
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    assert FEEDBACK in messages[1]["content"]


def test_long_feedback_keeps_head_and_tail():
    feedback = "FIRST ERROR\n" + "x" * 20_000 + "\nFINAL EXCEPTION"
    prompt = render_refinement(PROBLEM, previous_code=PREVIOUS, feedback=feedback, history=[])
    assert "FIRST ERROR" in prompt and "FINAL EXCEPTION" in prompt
    assert "characters omitted" in prompt
    assert len(prompt) < len(PROBLEM) + len(PREVIOUS) + FEEDBACK_MAX_CHARS + 3000
    assert trim_middle("short", 10) == "short"


@pytest.mark.parametrize("fmt", ["completion", "chat"])
def test_refinement_drops_oldest_history_first_to_fit_max_chars(fmt):
    history = [("mismatch", f"attempt number {i} " + "y" * 150) for i in range(1, 41)]
    kwargs = dict(
        previous_code=PREVIOUS, feedback=FEEDBACK, history=history, best_code=BEST, fmt=fmt
    )
    full = _text(render_refinement(PROBLEM, **kwargs, max_chars=10**6))
    budget = len(full) - 2000

    prompt = _text(render_refinement(PROBLEM, **kwargs, max_chars=budget))

    assert len(prompt) <= budget
    assert "attempt number 40 " in prompt  # the most recent survive
    assert "attempt number 1 " not in prompt  # the oldest go first
    assert re.search(r"\(\d+ earlier attempts omitted\)", prompt)
    assert BEST.strip() in prompt  # the best kernel outranks history
    assert PREVIOUS.strip() in prompt and FEEDBACK in prompt


def test_refinement_drops_best_code_after_all_history_but_never_the_essentials():
    best = "class ModelNew:\n" + "    x = 1\n" * 500
    kwargs = dict(
        previous_code=PREVIOUS,
        feedback=FEEDBACK,
        history=[("mismatch", "old")],
        best_code=best,
        best_summary="correct, 1.1x",
    )
    without_best = render_refinement(PROBLEM, **{**kwargs, "best_code": None}, max_chars=10**6)

    prompt = render_refinement(PROBLEM, **kwargs, max_chars=len(without_best) + 100)
    assert "x = 1" not in prompt
    assert "correct, 1.1x" in prompt and "left out here for length" in prompt

    tiny = render_refinement(PROBLEM, **kwargs, max_chars=100)
    assert PROBLEM.strip() in tiny and PREVIOUS.strip() in tiny and FEEDBACK in tiny


def _text(prompt: str | list[dict[str, str]]) -> str:
    if isinstance(prompt, str):
        return prompt
    return "".join(m["content"] for m in prompt)
