"""Issue 37: docs/architecture.md draws tools/ in wings and names every module of it, each under
its own wing (a line of the drawing that starts with the wing's path opens its part)."""

from __future__ import annotations

import re

from tests.helpers import ROOT

DOC = ROOT / "docs" / "architecture.md"


def _wing_parts(text: str) -> dict[str, str]:
    """The drawing's part of each `tools/<wing>/`: from the line that starts with its path to the
    next line that starts with `tools/`."""
    parts: dict[str, str] = {}
    wing = None
    for line in text.splitlines():
        m = re.match(r"tools/(\w+)/", line)
        if line.startswith("tools/"):
            wing = m.group(1) if m else None
        if wing:
            parts[wing] = parts.get(wing, "") + line + "\n"
    return parts


def test_every_module_of_tools_is_named_under_its_wing():
    parts = _wing_parts(DOC.read_text())
    missing = []
    for path in sorted((ROOT / "tools").rglob("*.py")):
        rel = path.relative_to(ROOT / "tools")
        if path.name == "__init__.py" or "__pycache__" in rel.parts:
            continue
        if len(rel.parts) != 2:
            missing.append(f"tools/{rel.as_posix()} (a module outside a wing)")
            continue
        wing, name = rel.parts
        if not re.search(rf"(?<![\w/]){re.escape(name)}\b", parts.get(wing, "")):
            missing.append(f"tools/{rel.as_posix()}")
    assert not missing, "not named under its wing in docs/architecture.md: " + ", ".join(missing)

