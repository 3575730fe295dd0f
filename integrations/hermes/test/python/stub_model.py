"""A stub OpenAI-compatible chat model for tests: no LLM, canned answers.

The reply to a user message is "stub answer: <the last user message>" (with " (turn N)"
from the second user message of a conversation on); a message "ASK <question>" gets
"[INPUT_REQUIRED] <question>"; a message "CALL_TOOL <name> <json args>" gets one tool
call of that tool first, then "stub answer: <the tool's result>". Speaks
/v1/chat/completions with and without streaming, and /v1/models.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _answer(messages: list) -> dict:
    """The assistant message the stub gives for this conversation."""
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return {"role": "assistant", "content": f"stub answer: {_text(last.get('content'))}"}
    user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    text = _text(user.get("content")).strip()
    if text.startswith("CALL_TOOL "):
        _, name, args = text.split(" ", 2)
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{int(time.time() * 1000)}", "type": "function",
                 "function": {"name": name, "arguments": args}}
            ],
        }
    if text.startswith("ASK "):
        return {"role": "assistant", "content": f"[INPUT_REQUIRED] {text[4:]}"}
    turns = sum(1 for m in messages if m.get("role") == "user")
    return {"role": "assistant", "content": f"stub answer: {text}" + (f" (turn {turns})" if turns > 1 else "")}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, {"error": {"message": "not found"}})
            return
        message = _answer(request.get("messages") or [])
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        created = int(time.time())
        if not request.get("stream"):
            self._json(200, {
                "id": "chatcmpl-stub", "object": "chat.completion", "created": created,
                "model": request.get("model", "stub-model"),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        delta = {"role": "assistant"}
        if message.get("content"):
            delta["content"] = message["content"]
        if message.get("tool_calls"):
            delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(message["tool_calls"])]
        chunks = [
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}},
        ]
        for chunk in chunks:
            chunk.update(id="chatcmpl-stub", object="chat.completion.chunk", created=created,
                         model=request.get("model", "stub-model"))
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def start_stub_model() -> tuple[str, ThreadingHTTPServer]:
    """Starts the stub on a free port; returns its base URL (…/v1) and the server."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1", server
