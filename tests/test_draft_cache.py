"""The compiler's draft of a problem is paid once per problem, device and versions: a later run
(a resumed bench, another optimize) takes it from the cache instead of compiling again."""

from __future__ import annotations

from agent.drafters import CompilerDrafter
from tools.sandbox import JobOutcome

PROBLEM = "class Model: ...\ndef get_inputs(): ...\ndef get_init_inputs(): ...\n"


class CountingSandbox:
    """Stands in for the sandbox: counts draft jobs and answers with `reply`."""

    def __init__(self, reply: JobOutcome):
        self.reply = reply
        self.jobs = 0

    def run(self, fn, *args, **kwargs):
        self.jobs += 1
        return self.reply


def ok_reply(source: str = "class ModelNew: pass  # drafted") -> JobOutcome:
    return JobOutcome(kind="ok", value={"source": source, "notes": ["note"]})


def test_a_second_draft_of_the_same_problem_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path))
    sb = CountingSandbox(ok_reply())
    first = CompilerDrafter(sb, "cuda").draft(PROBLEM, "p.py")
    again = CompilerDrafter(CountingSandbox(ok_reply("other")), "cuda").draft(PROBLEM, "p.py")
    assert sb.jobs == 1
    assert again["code"] == first["code"] == "class ModelNew: pass  # drafted"
    assert "from the draft cache" in again["response"] and again["source"] == "compiler"


def test_another_problem_or_device_is_drafted_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path))
    sb = CountingSandbox(ok_reply())
    d = CompilerDrafter(sb, "cuda")
    d.draft(PROBLEM, "p.py")
    d.draft(PROBLEM + "batch_size = 3\n", "p.py")
    assert sb.jobs == 2
    other = CountingSandbox(ok_reply())
    CompilerDrafter(other, "cuda").draft(PROBLEM, "p.py")
    assert other.jobs == 0  # same problem, same device: cached


def test_a_failed_draft_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path))
    failing = CountingSandbox(JobOutcome(kind="ok", value={"error": "torch.compile failed"}))
    cand = CompilerDrafter(failing, "cuda").draft(PROBLEM, "p.py")
    assert cand["code"] is None
    sb = CountingSandbox(ok_reply())
    assert CompilerDrafter(sb, "cuda").draft(PROBLEM, "p.py")["code"]
    assert sb.jobs == 1


def test_a_corrupt_cache_entry_is_drafted_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path))
    CompilerDrafter(CountingSandbox(ok_reply()), "cuda").draft(PROBLEM, "p.py")
    for f in (tmp_path / "drafts").iterdir():
        f.write_text("{not json")
    sb = CountingSandbox(ok_reply())
    assert CompilerDrafter(sb, "cuda").draft(PROBLEM, "p.py")["code"]
    assert sb.jobs == 1
