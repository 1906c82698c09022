"""LLM backends against real local stand-ins: an HTTP server on 127.0.0.1 and a tiny random Llama.

Nothing here reaches the network beyond 127.0.0.1 or downloads weights.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import time

import pytest

from agent.llm import (
    DEFAULT_MODEL,
    LLMBackend,
    OpenAIBackend,
    ReplayBackend,
    SamplingParams,
    make_backend,
)
from tests.fakes import openai_server as fake_server
from tests.fakes import tiny_llama
from tools.core.errors import BackendError, BadInputError

# Fixtures from tests/fakes (conftest.py belongs to the whole suite).
openai_server = fake_server.openai_server
tiny_llama_dir = tiny_llama.tiny_llama_dir
tiny_chat_llama_dir = tiny_llama.tiny_chat_llama_dir

MESSAGES = [
    {"role": "system", "content": "You write Triton kernels."},
    {"role": "user", "content": "Add two tensors."},
]


@pytest.fixture(autouse=True)
def _no_base_url_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests decide the server address themselves; a developer's shell must not leak in."""
    for var in ("TRITON_AGENT_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def fast_backend(url: str, **kw) -> OpenAIBackend:
    """Retries with millisecond backoff so failure tests stay fast."""
    kw = {"backoff_s": 0.001, "max_backoff_s": 0.01, "timeout_s": 5.0, **kw}
    return OpenAIBackend(base_url=url, **kw)


def free_port() -> int:
    """A port nothing listens on (bound and released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- OpenAI-compatible HTTP -------------------------------------------------------------------


def test_openai_string_prompt_uses_completions_with_n(openai_server):
    openai_server.replies = ["a", "b", "c"]
    backend = fast_backend(openai_server.url)
    assert backend.kind == "completion"  # KernelLLM is a raw-prompt model
    assert isinstance(backend, LLMBackend)

    replies = backend.generate("PROMPT", n=3, temperature=0.7, top_p=0.9, max_tokens=64)

    assert replies == ["a", "b", "c"]
    [(path, body)] = openai_server.requests
    assert path == "/v1/completions"
    assert body["prompt"] == "PROMPT"
    assert body["model"] == DEFAULT_MODEL
    assert (body["n"], body["temperature"], body["top_p"], body["max_tokens"]) == (3, 0.7, 0.9, 64)


def test_openai_messages_use_chat_completions(openai_server):
    openai_server.replies = ["x", "y", "z"]
    backend = fast_backend(openai_server.url, kind="chat")

    replies = backend.generate(MESSAGES, n=3)

    assert replies == ["x", "y", "z"]
    [(path, body)] = openai_server.requests
    assert path == "/v1/chat/completions"
    assert body["messages"] == MESSAGES
    assert body["n"] == 3


def test_openai_server_that_ignores_n_is_asked_again(openai_server):
    openai_server.max_n = 1  # like a server that drops `n`
    backend = fast_backend(openai_server.url)

    replies = backend.generate("p", n=3)

    assert replies == ["reply 0", "reply 1", "reply 2"]
    assert [body["n"] for _, body in openai_server.requests] == [3, 2, 1]


def test_openai_server_that_rejects_n_gets_one_per_request(openai_server):
    openai_server.failures = ["400"]
    backend = fast_backend(openai_server.url)

    assert len(backend.generate("p", n=2)) == 2
    assert [body["n"] for _, body in openai_server.requests] == [2, 1, 1]


@pytest.mark.parametrize("failures", [["503", "503"], ["500", "429"], ["drop"], ["empty", "blank"]])
def test_openai_retries_transient_failures(openai_server, failures):
    openai_server.failures = list(failures)
    openai_server.replies = ["ok"]
    backend = fast_backend(openai_server.url, max_attempts=3)

    assert backend.generate("p") == ["ok"]
    assert len(openai_server.requests) == len(failures) + 1


def test_openai_retries_a_timeout(openai_server):
    openai_server.failures = ["slow"]
    openai_server.slow_s = 1.0
    openai_server.replies = ["late but fine"]
    backend = fast_backend(openai_server.url, timeout_s=0.2)

    assert backend.generate("p") == ["late but fine"]


def test_openai_gives_up_after_persistent_failure(openai_server):
    openai_server.failures = ["503"] * 10
    backend = fast_backend(openai_server.url, max_attempts=3)

    with pytest.raises(BackendError, match=r"after 3 attempts.*HTTP 503|after 3 attempts"):
        backend.generate("p")
    assert len(openai_server.requests) == 3


def test_openai_persistent_empty_replies_are_an_error(openai_server):
    openai_server.failures = ["empty"] * 5
    backend = fast_backend(openai_server.url, max_attempts=2)

    with pytest.raises(BackendError, match="empty or whitespace-only"):
        backend.generate("p")


def test_openai_nothing_listening_says_how_to_start_a_server():
    url = f"http://127.0.0.1:{free_port()}/v1"
    backend = fast_backend(url, max_attempts=2)

    start = time.monotonic()
    with pytest.raises(BackendError) as info:
        backend.generate("p")
    message = str(info.value)

    assert time.monotonic() - start < 5
    assert url in message
    assert "vllm serve facebook/KernelLLM" in message
    assert "--base-url http://localhost:8000/v1" in message
    assert info.value.exit_code == 1


def test_openai_unknown_model_lists_served_models(openai_server):
    backend = fast_backend(openai_server.url, model="no/such-model")

    with pytest.raises(BackendError, match=r"HTTP 404.*serves: facebook/KernelLLM"):
        backend.generate("p")
    assert len(openai_server.requests) == 1  # a 404 is not retried


def test_openai_api_key_from_environment(openai_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert fast_backend(openai_server.url)._client.api_key == "sk-test"
    assert fast_backend(openai_server.url, api_key="given")._client.api_key == "given"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert fast_backend(openai_server.url)._client.api_key == "EMPTY"


def test_sampling_arguments_are_validated(openai_server):
    backend = fast_backend(openai_server.url)
    with pytest.raises(BadInputError):
        backend.generate("p", n=0)
    with pytest.raises(BadInputError):
        backend.generate([{"role": "robot", "content": "hi"}])
    with pytest.raises(BadInputError):
        SamplingParams(top_p=0)
    assert SamplingParams(n=4).as_kwargs() == {
        "n": 4,
        "temperature": 1.0,
        "top_p": 0.97,
        "max_tokens": 4096,
    }
    assert openai_server.requests == []


# -- replay -----------------------------------------------------------------------------------


def test_replay_returns_replies_in_order_and_records_prompts():
    backend = ReplayBackend(["one", "two", "three"])

    assert backend.generate("first prompt", n=2) == ["one", "two"]
    assert backend.generate(MESSAGES, n=1, temperature=0.5) == ["three"]
    assert backend.prompts == ["first prompt", MESSAGES]
    assert backend.calls[1]["temperature"] == 0.5
    assert backend.remaining == 0
    with pytest.raises(BackendError, match="replay backend has no replies left"):
        backend.generate("again")
    assert backend.prompts[-1] == "again"


def test_replay_returns_what_is_left_when_short():
    backend = ReplayBackend(["only"])
    assert backend.generate("p", n=3) == ["only"]


def test_replay_reads_jsonl(tmp_path):
    path = tmp_path / "replies.jsonl"
    path.write_text(
        json.dumps({"text": "```python\nclass ModelNew: ...\n```"})
        + "\n\n"
        + json.dumps({"text": "second", "note": "extra keys are ignored"})
        + "\n"
    )
    backend = ReplayBackend(str(path))
    assert backend.generate("p", n=2) == ["```python\nclass ModelNew: ...\n```", "second"]


@pytest.mark.parametrize("line", ["not json", '{"reply": "x"}', '"bare string"'])
def test_replay_rejects_malformed_jsonl(tmp_path, line):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(BadInputError, match=r"bad\.jsonl:1"):
        ReplayBackend(path)


# -- in-process transformers ------------------------------------------------------------------


def test_hf_backend_returns_n_continuations(tiny_llama_dir):
    from agent.llm.hf_backend import HFBackend

    backend = HFBackend(model=str(tiny_llama_dir), local_files_only=True, max_batch=2)
    assert backend.device == "cpu"
    assert backend.kind == "completion"  # no chat template: a base model
    prompt = "import torch\nclass ModelNew(nn.Module):\n"

    replies = backend.generate(prompt, n=3, max_tokens=8)

    assert len(replies) == 3
    assert all(isinstance(r, str) for r in replies)
    # Only the continuation comes back: at most 8 new tokens, never the prompt itself.
    tokenizer = backend.tokenizer
    longest_token = max(len(tokenizer.decode([i])) for i in range(len(tokenizer)))
    for reply in replies:
        assert "class ModelNew" not in reply
        assert len(reply) <= 8 * longest_token


def test_hf_backend_renders_messages_with_chat_template(tiny_chat_llama_dir, tiny_llama_dir):
    from agent.llm.hf_backend import HFBackend

    chat = HFBackend(model=str(tiny_chat_llama_dir), local_files_only=True)
    assert chat.kind == "chat"
    text, add_special = chat.render(MESSAGES)
    assert text == ("<|system|>You write Triton kernels.\n<|user|>Add two tensors.\n<|assistant|>")
    assert not add_special
    assert len(chat.generate(MESSAGES, n=2, max_tokens=4)) == 2

    plain = HFBackend(model=str(tiny_llama_dir), local_files_only=True)
    text, add_special = plain.render(MESSAGES)
    assert text == "You write Triton kernels.\n\nAdd two tensors.\n"
    assert add_special


def test_hf_backend_missing_model_is_a_backend_error(tmp_path):
    from agent.llm.hf_backend import HFBackend

    with pytest.raises(BackendError, match="could not load"):
        HFBackend(model=str(tmp_path / "nowhere"), local_files_only=True)


# -- LangChain chat model ---------------------------------------------------------------------


def test_langchain_backend_invokes_the_host_model_n_times():
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from agent.llm.langchain_backend import LangChainBackend

    backend = LangChainBackend(FakeListChatModel(responses=["r1", "r2", "r3"]), max_concurrency=1)
    assert backend.kind == "chat"
    assert backend.generate(MESSAGES, n=3) == ["r1", "r2", "r3"]
    assert backend.generate("plain prompt") == ["r1"]


# -- vLLM -------------------------------------------------------------------------------------


def test_vllm_missing_says_how_to_install_or_serve():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here; the not-installed message cannot be shown")
    from agent.llm.vllm_backend import VLLMBackend

    with pytest.raises(BackendError) as info:
        VLLMBackend(model="facebook/KernelLLM")
    message = str(info.value)
    assert "pip install 'triton-agent[vllm]'" in message
    assert "vllm serve facebook/KernelLLM" in message


# -- make_backend -----------------------------------------------------------------------------


def test_make_backend_auto_prefers_replay_then_server_then_local_dir(tmp_path, monkeypatch):
    replies = tmp_path / "r.jsonl"
    replies.write_text('{"text": "hi"}\n')

    replay = make_backend(replies=str(replies), base_url="http://127.0.0.1:9/v1")
    assert isinstance(replay, ReplayBackend)

    http = make_backend(base_url="http://127.0.0.1:9/v1", max_attempts=1)
    assert isinstance(http, OpenAIBackend)
    assert http.base_url == "http://127.0.0.1:9/v1"
    assert http.model == DEFAULT_MODEL
    assert http.max_attempts == 1

    monkeypatch.setenv("TRITON_AGENT_BASE_URL", "http://127.0.0.1:10/v1")
    from_env = make_backend(model="my/instruct-model")
    assert isinstance(from_env, OpenAIBackend)
    assert (from_env.base_url, from_env.kind) == ("http://127.0.0.1:10/v1", "chat")


def test_make_backend_auto_uses_hf_for_a_local_directory(tiny_llama_dir):
    from agent.llm.hf_backend import HFBackend

    backend = make_backend(model=str(tiny_llama_dir), local_files_only=True)
    assert isinstance(backend, HFBackend)


def test_make_backend_without_any_option_explains_the_choices():
    with pytest.raises(BackendError) as info:
        make_backend(model="facebook/KernelLLM")  # a hub name is never downloaded implicitly
    message = str(info.value)
    for option in ("--base-url", "vllm serve facebook/KernelLLM", "--model", "--replies"):
        assert option in message


def test_make_backend_explicit_kinds(openai_server):
    assert isinstance(make_backend("replay", replies=["a"]), ReplayBackend)
    backend = make_backend("openai", base_url=openai_server.url, prompt_kind="chat")
    assert backend.kind == "chat"
    with pytest.raises(BackendError, match="unknown backend"):
        make_backend("gpt")
    with pytest.raises(BackendError, match="needs replies"):
        make_backend("replay")


def test_a_broken_openai_install_stops_only_the_openai_backend():
    """On the GPU machine the openai package failed to import (a missing HTTP dependency) and
    took the replay backend down with it. Now only the OpenAI backend is affected, with a message."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        sys.modules["openai"] = None  # "import openai" now raises ImportError
        from agent.llm import make_backend
        from tools.core.errors import BackendError
        r = make_backend("replay", replies=["a"])
        assert r.generate.__self__ is r
        try:
            make_backend("openai", base_url="http://127.0.0.1:9/v1")
        except BackendError as e:
            print("MESSAGE:", e)
        else:
            raise SystemExit("no error")
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    assert p.returncode == 0, p.stderr
    assert "OpenAI-compatible backend cannot be loaded" in p.stdout
