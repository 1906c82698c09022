"""The compiler's draft of a problem is paid once per problem, device and versions: a later run
(a resumed bench, another optimize) takes it from the cache instead of compiling again."""

from __future__ import annotations

from agent.drafters import CompilerDrafter
from tools.sandboxing.sandbox import JobOutcome

PROBLEM = "class Model: ...\ndef get_inputs(): ...\ndef get_init_inputs(): ...\n"


class CountingSandbox:
    """Stands in for the sandbox: counts draft jobs and answers with `reply`."""

    def __init__(self, reply: JobOutcome, jobs_per_gpu: int = 1, replies=None):
        self.reply = reply
        self.replies = list(replies or [])
        self.jobs = 0
        self.jobs_per_gpu = jobs_per_gpu
        self.calls: list[dict] = []

    def run(self, fn, *args, **kwargs):
        self.jobs += 1
        self.calls.append(kwargs)
        return self.replies.pop(0) if self.replies else self.reply


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


def test_a_draft_has_its_gpu_alone_unless_the_gpu_is_shared_and_its_memory_known(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path))
    alone = CountingSandbox(ok_reply("a"), jobs_per_gpu=1)
    CompilerDrafter(alone, "cuda").draft(PROBLEM + "#1", "p.py", gpu_mb=4096)
    assert alone.calls[0]["exclusive"] is True
    unknown = CountingSandbox(ok_reply("b"), jobs_per_gpu=4)
    CompilerDrafter(unknown, "cuda").draft(PROBLEM + "#2", "p.py")
    assert unknown.calls[0]["exclusive"] is True
    shared = CountingSandbox(ok_reply("c"), jobs_per_gpu=4)
    CompilerDrafter(shared, "cuda").draft(PROBLEM + "#3", "p.py", gpu_mb=4096)
    assert shared.calls[0]["exclusive"] is False and shared.calls[0]["gpu_mb"] == 4096


def test_a_shared_draft_that_runs_out_of_gpu_memory_is_retried_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_AGENT_CACHE", str(tmp_path))
    oom = JobOutcome(kind="ok", value={"error": "torch.OutOfMemoryError: CUDA out of memory."})
    sb = CountingSandbox(ok_reply("retried"), jobs_per_gpu=4, replies=[oom])
    cand = CompilerDrafter(sb, "cuda").draft(PROBLEM + "#4", "p.py", gpu_mb=4096)
    assert cand["code"] == "retried"
    assert [c["exclusive"] for c in sb.calls] == [False, True]
    other = JobOutcome(kind="ok", value={"error": "Inductor could not draft p.py: KeyError"})
    sb = CountingSandbox(ok_reply("never"), jobs_per_gpu=4, replies=[other])
    assert CompilerDrafter(sb, "cuda").draft(PROBLEM + "#5", "p.py", gpu_mb=4096)["code"] is None
    assert sb.jobs == 1


def test_the_key_covers_the_code_copied_into_drafts(tmp_path, monkeypatch):
    """A change to the GEMM template or the convolution kernels (copied into every draft as
    text) or to the drafter makes a new key: a cached draft with an older template is not used."""
    import agent.drafters as drafters

    names = {p.replace("\\", "/").split("tools/", 1)[-1] for p in drafters.drafter_files()}
    assert {"kernels/gemm_template.py", "kernels/triton_conv.py", "compile/tune.py"} <= names
    assert "draft/job.py" in names
    # every file the convolutions' copied source comes from (the kernel families beside
    # triton_conv.py), not only the launcher's
    from tools.kernels import triton_conv

    assert set(triton_conv.source_files()) <= set(drafters.drafter_files())
    assert len(triton_conv.source_files()) > 1
    before = drafters.draft_cache_key("problem", "cuda")
    files = drafters.drafter_files()
    template = next(f for f in files if f.endswith("gemm_template.py"))
    copy = tmp_path / "gemm_template.py"
    copy.write_text(open(template).read() + "\n# changed\n")
    monkeypatch.setattr(
        drafters, "drafter_files", lambda: [str(copy) if f == template else f for f in files]
    )
    assert drafters.draft_cache_key("problem", "cuda") != before
