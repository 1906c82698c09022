"""`extract_code` on the reply shapes models actually produce."""

from __future__ import annotations

import ast

import pytest

from agent.extract import extract_code

KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""


def fenced(code: str, label: str = "python") -> str:
    return f"```{label}\n{code}```"


@pytest.mark.parametrize("label", ["python", "py", "", "Python3"])
def test_single_fenced_block_with_prose_around_it(label):
    reply = f"Here is the optimized model:\n\n{fenced(KERNEL, label)}\n\nIt fuses the relu."
    assert extract_code(reply) == KERNEL


def test_block_with_model_new_wins_over_other_blocks():
    reply = (
        "The original:\n```python\nclass Model(nn.Module):\n    pass\n```\n"
        "Install first:\n```bash\npip install triton\n```\n"
        f"The new one:\n{fenced(KERNEL)}\n"
        "Usage:\n```python\nm = Model()\n```\n"
    )
    assert extract_code(reply) == KERNEL


def test_last_parsing_model_new_block_wins():
    draft = "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x  # draft\n"
    broken = "class ModelNew(nn.Module):\n    def forward(self, x:\n"
    reply = f"{fenced(draft)}\nBetter:\n{fenced(KERNEL)}\nShorter:\n{fenced(broken)}"
    assert extract_code(reply) == KERNEL


def test_code_split_across_blocks_is_joined():
    imports, rest = KERNEL.split("\n\n\n", 1)
    kernel, model = rest.split("\n\n\n", 1)
    reply = (
        f"First the imports:\n{fenced(imports + chr(10))}\n"
        f"Then the kernel:\n{fenced(kernel + chr(10))}\n"
        f"And the module:\n{fenced(model)}\nDone."
    )
    code = extract_code(reply)
    assert code is not None
    assert code.index("import triton") < code.index("@triton.jit") < code.index("class ModelNew")
    ast.parse(code)


def test_unfenced_plain_code():
    assert extract_code(KERNEL) == KERNEL
    assert extract_code("\n\n" + KERNEL + "\n\n") == KERNEL


def test_unfenced_code_with_trailing_prose():
    reply = (
        KERNEL
        + "\nThis implementation launches one program per 1024 elements.\n1. It masks the tail.\n"
    )
    assert extract_code(reply) == KERNEL


def test_unfenced_code_after_an_introduction():
    reply = "Sure! Here's a faster version.\n\n" + KERNEL
    assert extract_code(reply) == KERNEL


def test_kernelllm_continuation_that_starts_inside_a_fence():
    # The completion prompt ended with an opening fence: the reply is code, a closing fence, talk.
    reply = KERNEL + "```\n\nThe kernel above replaces torch.relu.\n```python\nprint('x')\n```"
    assert extract_code(reply) == KERNEL


def test_reply_cut_off_by_max_tokens_keeps_the_open_block():
    truncated = KERNEL[: KERNEL.index("        return out")]
    reply = "```python\n" + truncated
    assert extract_code(reply) == truncated.rstrip() + "\n"


def test_closing_fence_glued_to_the_last_line():
    reply = "```python\n" + KERNEL.rstrip() + "```\nThat is all."
    assert extract_code(reply) == KERNEL


def test_indented_block_inside_a_list_is_dedented():
    indented = "".join(f"   {line}" if line.strip() else line for line in KERNEL.splitlines(True))
    reply = f"1. The code:\n   ```python\n{indented}   ```\n"
    assert extract_code(reply) == KERNEL


def test_special_tokens_and_windows_newlines_are_removed():
    reply = fenced(KERNEL).replace("\n", "\r\n") + "<|eot_id|>"
    assert extract_code(reply) == KERNEL


def test_code_without_model_new_is_still_returned_for_the_verifier():
    kernel_only = KERNEL[: KERNEL.index("class ModelNew")].rstrip() + "\n"
    reply = f"Partial answer:\n{fenced(kernel_only)}"
    assert extract_code(reply) == kernel_only


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   \n",
        "I cannot help with that.",
        "To make this faster, fuse the relu into the matmul and use a larger block size.",
        "Run this first:\n```bash\npip install triton\n```\nThen it works.",
        None,
    ],
)
def test_replies_without_code_give_none(reply):
    assert extract_code(reply) is None
