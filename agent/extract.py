"""Pull the candidate module out of an LLM reply. Never raises: no code means `None`.

Replies come in many shapes, and each is handled:

- one fenced block (```python, ```py, or an unlabeled ```), possibly with prose around it;
- several blocks: the one that defines `class ModelNew` wins (the last such block when there
  are several, preferring blocks that parse). When the code is split across blocks (imports in
  one, kernels in another, the class in a third), the earlier blocks that define names the
  `ModelNew` block uses but lacks are joined in front of it, in reply order;
- no fence at all, the reply being plain code (starts with import/from/@triton/def/class),
  possibly followed by prose, which is cut off;
- a KernelLLM continuation that starts in the middle of code (the completion prompt may end
  inside a fence), so the first fence seen is a *closing* one;
- a fence left open because the reply hit `max_tokens` (the rest of the reply is the code);
- no code anywhere: `None`.

Blocks labelled with another language (```bash, ```text, ```json ...) are ignored. When no block
defines `ModelNew`, the most kernel-like code is still returned, so the verifier can report the
missing class instead of "no code".
"""

from __future__ import annotations

import keyword
import re
import textwrap
from dataclasses import dataclass

from tools.core import pyast

PYTHON_LABELS = {"", "python", "python3", "py", "triton"}
SPECIAL_TOKENS = re.compile(r"<\|(?:begin_of_text|end_of_text|eot_id|im_end|endoftext)\|>")
FENCE = re.compile(r"^[ \t]*(`{3,})[ \t]*([\w+.#-]*)[^\n`]*$")
ORIGINAL_MODEL = re.compile(r"^[ \t]*class[ \t]+Model\b", re.MULTILINE)
MODEL_NEW = re.compile(r"^[ \t]*class[ \t]+ModelNew\b", re.MULTILINE)
CODE_START = re.compile(r"^(?:import\s|from\s+\S+\s+import\b|@triton|@torch|def\s|class\s)")
KERNEL_MARK = re.compile(r"@triton\.(?:jit|autotune|heuristics)|\btl\.|\bimport\s+triton\b")
PROSE = re.compile(
    r"^(?:"
    r"[A-Za-z][\w'’-]*,?\s+[A-Za-z(`\"'][^\n]*"  # two words in a row: "This kernel ..."
    r"|[A-Za-z][\w' -]*:\s*"  # a heading: "Explanation:"
    r"|[A-Za-z][\w'’-]*:\s+[A-Za-z`][^=\n]*"  # "Note: the grid ..."
    r"|\d+[.)]\s+\S.*"  # a numbered list item
    r"|[-*]\s+\S.*|\*\*.*"  # a bullet, bold text
    r")$"
)
"""A line of text rather than code (callers also rule out lines starting with a keyword)."""
SOFT_KEYWORDS = {"match", "case", "type", "print"}


@dataclass
class _Block:
    text: str
    label: str
    closed: bool

    @property
    def is_python(self) -> bool:
        return self.label.lower() in PYTHON_LABELS

    @property
    def defines_model_new(self) -> bool:
        return bool(MODEL_NEW.search(self.text))


def extract_code(reply: str) -> str | None:
    """The Python module in `reply`, or None when there is none."""
    if not isinstance(reply, str):
        return None
    text = SPECIAL_TOKENS.sub("", reply).replace("\r\n", "\n")
    if not text.strip():
        return None
    blocks = [b for b in _split_blocks(text) if b.is_python and b.text.strip()]
    if not blocks:
        return _unfenced_code(text)

    with_class = [b for b in blocks if b.defines_model_new]
    if with_class:
        parsing = [b for b in with_class if _parses(b.text)]
        chosen = (parsing or with_class)[-1]
        parts = [*_blocks_it_needs(chosen, blocks[: blocks.index(chosen)]), chosen]
        return _clean("\n\n".join(textwrap.dedent(b.text).strip("\n") for b in parts))
    # No ModelNew anywhere: hand back the most kernel-like block so the verifier can say so.
    kernel_like = [b for b in blocks if KERNEL_MARK.search(b.text)] or blocks
    if not any(_looks_like_code(b.text) for b in kernel_like):
        return None
    return _clean(max(kernel_like, key=lambda b: len(b.text)).text)


def _blocks_it_needs(chosen: _Block, earlier: list[_Block]) -> list[_Block]:
    """Earlier blocks that define names `chosen` uses but does not define itself (the imports
    or kernels of a reply split across blocks). Restatements of the original `Model` and other
    `ModelNew` drafts are never pulled in."""
    missing = _words(chosen.text) - _top_level_names(chosen.text)
    return [
        b
        for b in earlier
        if not b.defines_model_new
        and not ORIGINAL_MODEL.search(b.text)
        and _top_level_names(b.text) & missing
    ]


def _top_level_names(code: str) -> set[str]:
    """Names a module binds at top level: defs, classes, assignments, imports (by regex, so
    code that does not parse still counts)."""
    code = textwrap.dedent(code)
    names = set(re.findall(r"^(?:async\s+)?def\s+(\w+)|^class\s+(\w+)", code, re.MULTILINE))
    found = {n for pair in names for n in pair if n}
    found |= set(re.findall(r"^(\w+)\s*(?::[^=\n]*)?=(?!=)", code, re.MULTILINE))
    for module, alias in re.findall(r"^import\s+([\w.]+)(?:\s+as\s+(\w+))?", code, re.MULTILINE):
        found.add(alias or module.split(".")[0])
    for imported in re.findall(r"^from\s+\S+\s+import\s+\(?([^)\n]+)", code, re.MULTILINE):
        for item in imported.split(","):
            words = item.split()
            if words:
                found.add(words[-1])
    return found


def _words(code: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_]\w*", code))


def _split_blocks(text: str) -> list[_Block]:
    """Fenced blocks in order; a leading run of code closed by a bare fence counts as one."""
    lines = text.split("\n")
    blocks: list[_Block] = []
    first_fence = next((i for i, line in enumerate(lines) if FENCE.match(line)), None)
    if first_fence is None:
        return []
    start = 0
    leading = "\n".join(lines[:first_fence])
    if _looks_like_code(leading):
        # A continuation that began inside a fence: the code comes first, then its closing fence.
        match = FENCE.match(lines[first_fence])
        bare = match is not None and not match.group(2)
        blocks.append(_Block(leading, "python", closed=bare))
        start = first_fence + 1 if bare else first_fence

    i = start
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        ticks, label = match.group(1), match.group(2)
        body: list[str] = []
        i += 1
        closed = False
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and not close.group(2) and len(close.group(1)) >= len(ticks):
                closed = True
                break
            if lines[i].rstrip().endswith(ticks) and not close:
                # The closing fence glued to the last line of code: "    return out```".
                body.append(lines[i].rstrip()[: -len(ticks)])
                closed = True
                break
            body.append(lines[i])
            i += 1
        blocks.append(_Block("\n".join(body), label, closed))
        i += 1
    return blocks


def _unfenced_code(text: str) -> str | None:
    """Code without fences: the whole reply, or from the first line where code starts."""
    lines = text.strip("\n").split("\n")
    start = next((i for i, line in enumerate(lines) if CODE_START.match(line)), None)
    if start is None:
        return None
    code = "\n".join(lines[start:])
    if start > 0 and not (MODEL_NEW.search(code) or KERNEL_MARK.search(code)):
        # Prose first, then something code-like but no kernel: likely just an explanation.
        return None
    return _clean(_cut_trailing_prose(code))


def _cut_trailing_prose(code: str) -> str:
    """Drop the explanation a model appends after unfenced code.

    Cut at the first top-level prose line whose preceding code parses; if the code never parses
    (a reply truncated mid-function), cut at the first top-level prose line anyway.
    """
    if _parses(code):
        return code
    lines = code.split("\n")
    prose_at = [i for i, line in enumerate(lines) if i > 0 and _is_prose(line)]
    for i in prose_at:
        head = "\n".join(lines[:i])
        if _parses(head):
            return head
    if prose_at:
        return "\n".join(lines[: prose_at[0]])
    return code


def _is_prose(line: str) -> bool:
    """A top-level (unindented) line that reads as text rather than Python."""
    if not line or line[0].isspace() or not PROSE.match(line):
        return False
    first = re.match(r"[A-Za-z_]\w*", line)
    return not (first and (keyword.iskeyword(first.group()) or first.group() in SOFT_KEYWORDS))


def _looks_like_code(text: str) -> bool:
    stripped = text.strip("\n")
    if not stripped.strip():
        return False
    first = stripped.lstrip().split("\n", 1)[0]
    return bool(CODE_START.match(first) or MODEL_NEW.search(stripped))


def _parses(code: str) -> bool:
    try:
        pyast.parse(textwrap.dedent(code))
    except (SyntaxError, ValueError):
        return False
    return True


def _clean(code: str) -> str:
    """Dedent (blocks inside list items are indented), trim blank edges, end with a newline."""
    return textwrap.dedent(code).strip("\n").rstrip() + "\n"
