"""Issue 18: one owner per job. The backend is chosen in one place (flags and environment read
the same way by every command), and `agent/` and `tools/` import without cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agent.bench import BenchConfig
from agent.config import AgentConfig
from agent.llm import resolve_kind
from tests.helpers import ROOT
from tools.core.errors import BackendConfigError


def _kind(cfg: AgentConfig) -> str:
    return resolve_kind(
        cfg.backend, model=cfg.model, base_url=cfg.base_url, replies=cfg.replies, compiler=True
    )


def test_openai_base_url_alone_reaches_the_server_in_every_command(monkeypatch):
    # optimize used the compiler while generate_triton called the server (issue 18)
    monkeypatch.delenv("TRITON_AGENT_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    cfg = AgentConfig()
    assert cfg.base_url == "http://127.0.0.1:9/v1"
    assert _kind(cfg) == "openai"
    assert resolve_kind("auto") == "openai"  # the API's generate_triton
    assert BenchConfig(out="x", agent=cfg).compiler_only is False


def test_nothing_configured_is_the_compiler_and_a_bare_model_name_is_refused(monkeypatch):
    for var in ("TRITON_AGENT_BASE_URL", "OPENAI_BASE_URL", "TRITON_AGENT_MODEL"):
        monkeypatch.delenv(var, raising=False)
    assert _kind(AgentConfig()) == "compiler"
    assert BenchConfig(out="x").compiler_only
    with pytest.raises(BackendConfigError, match="no LLM backend configured"):
        _kind(AgentConfig(model="facebook/KernelLLM"))
    with pytest.raises(BackendConfigError, match="unknown backend"):
        resolve_kind("compiler")  # the API's make_backend has no compiler backend


def _imports(path: Path, package: str, modules: set[str]) -> set[str]:
    """Modules of agent/ and tools/ that `path` imports, at module level, inside functions (a
    lazy import is still a dependency: cli -> commands -> cmd_* -> cli was a loop) or under
    `if TYPE_CHECKING:` (a type a module names is a dependency its reader follows: issue 37).
    `from pkg import sub` depends on `pkg.sub`."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            subs = {f"{mod}.{a.name}" for a in node.names} & modules
            found.update(subs if len(subs) == len(node.names) else subs | {mod})
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(str(node.args[0].value))
    return {m for m in found if m.split(".")[0] in ("agent", "tools")}


def _module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of agent/ and tools/ it imports, for the tree under `root`."""
    modules: dict[str, Path] = {}
    for top in ("agent", "tools"):
        for path in (root / top).rglob("*.py"):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps = _imports(path, package, set(modules))
        graph[name] = {m for m in deps if m in modules and m != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m) :] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_a_cycle_through_a_lazy_or_a_type_checking_import_is_found(tmp_path):
    """The checker on a tree of its own: a cycle closed by an import under `if TYPE_CHECKING:`,
    or by one inside a function, is a cycle; the same tree without that import has none."""
    pkg = tmp_path / "tools"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tools.high import High\n"
        "def helper(h: High) -> int:\n"
        "    return 1\n"
    )
    (pkg / "high.py").write_text("from tools.low import helper\nclass High: ...\n")
    assert _cycle(_module_graph(tmp_path)) == ["tools.high", "tools.low", "tools.high"]
    (pkg / "low.py").write_text("def helper(h) -> int:\n    from tools import high\n    return 1\n")
    assert _cycle(_module_graph(tmp_path)) == ["tools.high", "tools.low", "tools.high"]
    (pkg / "low.py").write_text("def helper(h) -> int:\n    return 1\n")
    assert _cycle(_module_graph(tmp_path)) is None


def test_no_import_cycles_in_agent_and_tools():
    """No cycle among agent/ and tools/ modules, lazy and `TYPE_CHECKING` imports included."""
    graph = _module_graph()
    assert "agent.cli" in graph or "agent.cli.main" in graph
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_tools_never_import_agent():
    graph = _module_graph()
    bad = {n: sorted(m for m in deps if m.startswith("agent")) for n, deps in graph.items()}
    assert {n: d for n, d in bad.items() if n.startswith("tools") and d} == {}


def test_the_loop_bench_and_dataset_evaluate_through_one_seam(monkeypatch):
    """`tools.orchestrate.evaluate.evaluate` is the one evaluation: replacing it there replaces it for the
    loop, bench and dataset (no command has its own copy of the rules)."""
    from types import SimpleNamespace

    import tools.orchestrate.evaluate
    from agent.bench import Draft, evaluate_sample
    from agent.dataset.build import _check
    from agent.evaluation import evaluate_candidate
    from tools.orchestrate.evaluate import Evaluation, no_code_verdict

    seen: list[str] = []

    def fake(problem, code, *, verifier, kernel_path="candidate.py", **kw):
        seen.append(kernel_path)
        return Evaluation(
            status="slower", correct=True, compiled=True, verdict=no_code_verdict("x"),
            baseline="best", speedups={"eager": 2.0, "compile": 0.5, "best": 0.5}, speedup=0.5,
            summary="faked",
        )  # fmt: skip

    monkeypatch.setattr(tools.orchestrate.evaluate, "evaluate", fake)
    problem = SimpleNamespace(name="p", path="p.py", source="")
    verifier = SimpleNamespace(device="cpu")
    rec = evaluate_sample(verifier, problem, Draft(problem="p", sample=0, source="llm:x", code="c"))
    assert rec.record.status == "slower" and rec.record.speedups["best"] == 0.5
    ctx = SimpleNamespace(
        verifier=verifier, config=SimpleNamespace(baseline="best"), emit=lambda *a, **k: None
    )
    cand = {"source": "llm:x", "prompt": None, "response": "", "code": "c"}
    attempt = evaluate_candidate(ctx, problem, cand, index=3, round_=1)
    assert attempt["status"] == "slower" and attempt["summary"] == "faked"
    item = SimpleNamespace(problem=problem)
    _, timing = _check(item, "c", verifier, True)
    assert timing["speedup"] == 2.0 and timing["speedup_compile"] == 0.5
    assert seen == ["p_00.py", "attempt_03.py", "kernel.py"]


def test_the_run_report_gives_the_speedup_over_each_baseline_and_the_better():
    from agent.report import render_markdown

    attempt = {"index": 0, "round": 1, "source": "compiler", "status": "slower", "speedup": 0.8,
               "speedups": {"eager": 1.6, "compile": 0.8, "best": 0.8}, "summary": "s"}  # fmt: skip
    r = {"command": "optimize", "problem": "p.py", "correct": True, "timed": True,
         "faster": False, "stop_reason": "budget", "best": None, "attempts": [attempt]}  # fmt: skip
    md = render_markdown(r)
    assert "| vs eager | vs compile | vs better |" in md
    assert "| 0 | 1 | compiler | slower | 1.60x | 0.80x | 0.80x | s |" in md
