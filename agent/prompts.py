"""Render the prompts in `prompts/` for a problem: one function per prompt.

Templates are plain text files with `string.Template` placeholders (`$name`; `$$` is a literal
dollar sign). Three partials are shared and filled in by name, never copied into templates:

- `$example`     `_example_add.txt`: the one-shot example, a `Model` computing `a + b` and its
                 `ModelNew` with an `add_kernel` and a `triton_add` launcher;
- `$rules`       `_rules.txt`: what a valid `ModelNew` must satisfy (the verifier's contract);
- `$instruction` `_instruction.txt`: the closing "Optimize the architecture named Model ..." line.

`render_kernelllm` follows the raw-completion layout KernelLLM was fine-tuned on (instruction
paragraph, one-shot example, "You are given the following architecture:", the problem, the
closing instruction); it leaves out `$rules` to stay close to that layout. Users can swap it with
`--prompt-template FILE`, a file using `$problem` and optionally `$example`, `$rules`,
`$instruction` (e.g. Meta's verbatim upstream prompt with `{}` replaced by `$problem`).

Refinement prompts and `max_chars` (`render_refinement`). A refinement prompt carries, in order of
priority:

1. always: the problem, the previous candidate's code and the tools' feedback on it (feedback
   longer than `FEEDBACK_MAX_CHARS` is cut to its head and tail, which hold the first compiler
   error and the final exception line);
2. the best correct kernel so far with its summary;
3. the history of earlier attempts, one line each, most recent first in priority.

When the prompt exceeds `max_chars`, the oldest history lines are dropped first (a line says how
many), then the best kernel's code (its summary line stays). The always-kept part is never cut,
so a prompt can still exceed `max_chars` when the problem and previous code alone are longer.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from string import Template
from typing import Literal

from tools.core.errors import BadInputError

Message = dict[str, str]
Fmt = Literal["completion", "chat"]

FEEDBACK_MAX_CHARS = 4000
"""Longer feedback is cut to its head and tail (see `trim_middle`)."""
SUMMARY_MAX_CHARS = 200
"""One history line's summary is cut to this length."""

PLACEHOLDERS = ("problem", "example", "rules", "instruction")
"""What a custom `--prompt-template` file may use; `$problem` is required."""


def load_template(name: str) -> str:
    """The text of a template or partial shipped in the `prompts` package, e.g. "_rules.txt"."""
    return resources.files("prompts").joinpath(name).read_text(encoding="utf-8")


def problem_at_precision(problem_source: str, precision: str) -> str:
    """The problem as the prompts show it at `--precision` (`tools.core.problem_dtype`): as written
    at fp32; at bf16/fp16 followed by `_precision.txt`, a comment that says the dtype the
    harness casts the model and its inputs to and what that asks of the kernel."""
    from tools.core.problem_dtype import KERNELBENCH_TOLERANCE, torch_dtype

    if precision == "fp32":
        return problem_source
    note = _fill(
        load_template("_precision.txt"),
        precision=precision,
        torch_dtype=str(torch_dtype(precision)),
        tolerance=f"{KERNELBENCH_TOLERANCE[precision]:g}",
    )
    return problem_source.rstrip("\n") + "\n\n" + note.strip() + "\n"


def render_kernelllm(problem_source: str, template_path: str | None = None) -> str:
    """KernelLLM's raw-completion prompt for a KernelBench-format problem."""
    if template_path is None:
        template = load_template("kernelllm.txt")
    else:
        template = _read_user_template(template_path)
    return _fill(template, problem=problem_source.strip("\n"), **_partials())


def render_chat(problem_source: str) -> list[Message]:
    """System and user messages for an instruct (chat) model."""
    return [
        {"role": "system", "content": load_template("chat_system.txt").strip()},
        {
            "role": "user",
            "content": _fill(
                load_template("chat_user.txt"), problem=problem_source.strip("\n"), **_partials()
            ).strip(),
        },
    ]


def render_refinement(
    problem_source: str,
    *,
    previous_code: str,
    feedback: str,
    history: list[tuple[str, str]],
    best_code: str | None = None,
    best_summary: str | None = None,
    fmt: Fmt = "completion",
    max_chars: int = 24000,
) -> str | list[Message]:
    """A prompt asking for a better kernel given the previous one and what the tools found.

    `feedback` is pre-rendered evidence (compiler error at its line, mismatch report, profile and
    roofline numbers). `history` lists earlier attempts, oldest first, as (status, one-line
    summary). `best_summary` says what the best kernel is ("correct, 1.3x over eager", or
    "compiler-generated baseline, the version to beat"). `fmt` "completion" returns one string,
    "chat" a system + user message list. See the module docstring for the `max_chars` policy.
    """
    if fmt not in ("completion", "chat"):
        raise ValueError(f"fmt must be 'completion' or 'chat', got {fmt!r}")
    template = load_template("refine.txt")
    fixed = {
        "problem": problem_source.strip("\n"),
        "previous_code": previous_code.strip("\n"),
        "feedback": trim_middle(feedback.strip(), FEEDBACK_MAX_CHARS),
        **_partials(),
    }
    system = load_template("chat_system.txt").strip() if fmt == "chat" else ""
    lines = _history_lines(history)
    same_as_previous = best_code is not None and best_code.strip() == previous_code.strip()

    def render(keep_lines: int, with_best_code: bool) -> str:
        best = _best_section(
            best_code if with_best_code and not same_as_previous else None,
            best_summary,
            same_as_previous=same_as_previous,
            code_dropped=best_code is not None and not with_best_code and not same_as_previous,
        )
        text = _fill(template, best=best, history=_history_section(lines, keep_lines), **fixed)
        return text.strip() + "\n" if fmt == "completion" else text.strip()

    text = render(len(lines), True)
    keep = len(lines)
    while len(text) + len(system) > max_chars and keep > 0:
        keep -= 1
        text = render(keep, True)
    if len(text) + len(system) > max_chars and best_code is not None:
        text = render(0, False)
    if fmt == "completion":
        return text
    return [{"role": "system", "content": system}, {"role": "user", "content": text}]


def trim_middle(text: str, limit: int) -> str:
    """`text` if it fits in `limit` characters, else its head and tail around a marker line.

    The head gets 60%: compiler output puts the first (root) error first; the tail keeps the
    last lines of a traceback, which name the exception.
    """
    if len(text) <= limit:
        return text
    head = int(limit * 0.6)
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted} characters omitted ...]\n{text[-tail:]}"


def _partials() -> dict[str, str]:
    return {
        "example": load_template("_example_add.txt").strip(),
        "rules": load_template("_rules.txt").strip(),
        "instruction": load_template("_instruction.txt").strip(),
    }


def _fill(template: str, **values: str) -> str:
    """Substitute `$name` placeholders; values are inserted verbatim (never re-scanned)."""
    return Template(template).safe_substitute(values)


def _read_user_template(path: str) -> str:
    """A `--prompt-template` file, checked for `$problem` and for unknown placeholders."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise BadInputError(f"cannot read prompt template {path}: {e.strerror or e}") from e
    used = set()
    for match in Template.pattern.finditer(text):
        name = match.group("named") or match.group("braced")
        if name:
            used.add(name)
    unknown = sorted(used - set(PLACEHOLDERS))
    if unknown:
        raise BadInputError(
            f"prompt template {path} uses unknown placeholder(s) "
            f"{', '.join('$' + u for u in unknown)}; known: "
            f"{', '.join('$' + p for p in PLACEHOLDERS)} (write $$ for a literal $)"
        )
    if "problem" not in used:
        raise BadInputError(
            f"prompt template {path} has no $problem placeholder for the problem's source"
        )
    return text


def _history_lines(history: list[tuple[str, str]]) -> list[str]:
    """One line per earlier attempt, numbered from 1 in the order given."""
    lines = []
    for number, (status, summary) in enumerate(history, start=1):
        one_line = re.sub(r"\s+", " ", summary).strip()
        if len(one_line) > SUMMARY_MAX_CHARS:
            one_line = one_line[: SUMMARY_MAX_CHARS - 3] + "..."
        lines.append(f"- attempt {number}: {status}" + (f": {one_line}" if one_line else ""))
    return lines


def _history_section(lines: list[str], keep: int) -> str:
    if not lines:
        return ""
    dropped = len(lines) - keep
    body = lines[dropped:]
    if dropped:
        body = [f"- ({dropped} earlier attempt{'s' if dropped > 1 else ''} omitted)", *body]
    return "\nEarlier attempts, oldest first:\n" + "\n".join(body) + "\n"


def _best_section(
    code: str | None, summary: str | None, *, same_as_previous: bool, code_dropped: bool
) -> str:
    said = f" ({summary.strip()})" if summary else ""
    if same_as_previous:
        return f"\nThe previous attempt is the best kernel so far{said}.\n"
    if code is not None:
        return f"\nThe best kernel so far{said}:\n```\n{code.strip(chr(10))}\n```\n"
    if code_dropped:
        return f"\nThe best kernel so far{said} is left out here for length.\n"
    if summary:
        return f"\nBest so far: {summary.strip()}.\n"
    return ""
