"""Render a verdict's evidence as text: what a person reads and what the LLM is shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tools.core.results import Verdict

MAX_FEEDBACK_CHARS = 4000


def render_feedback(v: Verdict) -> str:
    lines = [f"Verdict: {v.status}. {v.message}"]
    ev = v.evidence
    if ev.error is not None and ev.error.message and ev.error.message.strip() not in v.message:
        where = f" (line {ev.error.line})" if ev.error.line else ""
        lines.append(f"Error{where}: {ev.error.kind}")
        if ev.error.code:
            lines.append(f"    {ev.error.code.strip()}")
        lines.append(_trim(ev.error.message, 2000))
    elif ev.error is not None and ev.error.code:
        lines.append(f"    line {ev.error.line}: {ev.error.code.strip()}")
    for e in ev.aot_errors[:2]:
        where = f" (line {e.line})" if e.line else ""
        lines.append(f"Real compiler error{where}:")
        if e.code:
            lines.append(f"    {e.code.strip()}")
        lines.append(_trim(e.message, 1500))
    if ev.mismatch is not None and ev.mismatch.summary() not in v.message:
        lines.append(ev.mismatch.summary())
    if ev.expected_shapes and v.status == "shape_mismatch":
        lines.append(f"Expected output shapes: {ev.expected_shapes}; got: {ev.got_shapes}")
    if ev.audit is not None:
        a = ev.audit
        if a.torch_compute_ops and v.status == "cheat":
            lines.append("PyTorch ops seen inside forward: " + ", ".join(a.torch_compute_ops))
        if a.kernels and v.status != "ok":
            lines.append(
                f"Triton kernels launched: {', '.join(a.kernels)} ({a.triton_launches} launches)"
            )
    if ev.resources:
        res = "; ".join(
            f"{r.name}: {r.registers} regs, {r.spills_bytes or 0} B spilled, {r.shared_bytes or 0} B shared"
            for r in ev.resources[:4]
        )
        lines.append(f"Compiled for {ev.resources[0].target}: {res}")
    if ev.stderr_tail and v.status in ("crash", "timeout", "runtime_error"):
        lines.append("Last output of the process:\n" + _trim(ev.stderr_tail, 1200))
    for n in ev.notes[:3]:
        lines.append(f"Note: {n}")
    return _trim("\n".join(lines), MAX_FEEDBACK_CHARS)


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2 - 20
    return text[:half] + "\n... [trimmed] ...\n" + text[-half:]
