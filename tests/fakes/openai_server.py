"""A real HTTP server on 127.0.0.1 that speaks enough of the OpenAI API for the backends' tests.

Endpoints: `POST /v1/completions`, `POST /v1/chat/completions` (both honour `n`, capped by
`max_n` to imitate servers that ignore it) and `GET /v1/models`. Replies come from `replies` in
order (cycling when exhausted). `failures` scripts what the next requests suffer, one entry per
request, consumed first:

- "503", "500", "429", "400", "404": that HTTP status with an OpenAI-style error body;
- "slow": sleep `slow_s` before answering (longer than the client's timeout in tests);
- "empty": answer normally but with empty strings as texts;
- "blank": answer with whitespace-only texts;
- "drop": close the connection without answering.

Every request is recorded in `requests` as `(path, body)`. Use the `openai_server` fixture:

    from tests.fakes import openai_server as fake_server

    openai_server = fake_server.openai_server  # makes the fixture visible in this module

    def test_x(openai_server):
        openai_server.replies = ["hello"]
        backend = OpenAIBackend(base_url=openai_server.url, ...)
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

MODEL = "facebook/KernelLLM"


class FakeOpenAIServer:
    """Start with `start()` (binds port 0), stop with `stop()`; `url` ends in /v1."""

    def __init__(
        self,
        replies: list[str] | None = None,
        *,
        failures: list[str] | None = None,
        max_n: int | None = None,
        slow_s: float = 1.0,
        models: tuple[str, ...] = (MODEL,),
    ) -> None:
        self.replies = list(replies or [])
        self.failures = list(failures or [])
        self.max_n = max_n
        self.slow_s = slow_s
        self.models = models
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._served = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- called from handler threads ------------------------------------------------------

    def _next_failure(self, path: str, body: dict[str, Any]) -> str | None:
        with self._lock:
            self.requests.append((path, body))
            return self.failures.pop(0) if self.failures else None

    def _next_texts(self, count: int) -> list[str]:
        with self._lock:
            texts = []
            for _ in range(count):
                if self.replies:
                    texts.append(self.replies[self._served % len(self.replies)])
                else:
                    texts.append(f"reply {self._served}")
                self._served += 1
            return texts


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output quiet
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in server.models]
                self._json(200, {"object": "list", "data": data})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError:
                self._error(400, "body is not JSON")
                return
            path = self.path.rstrip("/")
            failure = server._next_failure(path, body)
            if failure == "drop":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if failure and failure.isdigit():
                self._error(int(failure), f"simulated HTTP {failure}")
                return
            if failure == "slow":
                time.sleep(server.slow_s)
            if path not in ("/v1/completions", "/v1/chat/completions"):
                self._error(404, f"no route {self.path}")
                return
            if body.get("model") not in server.models:
                self._error(404, f"The model `{body.get('model')}` does not exist.")
                return
            n = int(body.get("n") or 1)
            if server.max_n is not None:
                n = min(n, server.max_n)
            texts = server._next_texts(n)
            if failure == "empty":
                texts = ["" for _ in texts]
            elif failure == "blank":
                texts = ["  \n\t " for _ in texts]
            self._json(200, _response(path, body["model"], texts))

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test); nothing to tell it

        def _error(self, status: int, message: str) -> None:
            self._json(status, {"error": {"message": message, "type": "fake", "code": status}})

    return Handler


def _response(path: str, model: str, texts: list[str]) -> dict[str, Any]:
    created = int(time.time())
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if path == "/v1/completions":
        choices = [
            {"index": i, "text": t, "finish_reason": "stop", "logprobs": None}
            for i, t in enumerate(texts)
        ]
        obj = "text_completion"
    else:
        choices = [
            {
                "index": i,
                "message": {"role": "assistant", "content": t},
                "finish_reason": "stop",
                "logprobs": None,
            }
            for i, t in enumerate(texts)
        ]
        obj = "chat.completion"
    return {
        "id": "fake-1",
        "object": obj,
        "created": created,
        "model": model,
        "choices": choices,
        "usage": usage,
    }


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A started `FakeOpenAIServer`; configure `replies` / `failures` / `max_n` in the test."""
    server = FakeOpenAIServer().start()
    try:
        yield server
    finally:
        server.stop()
