"""A2A HTTP client that behaves on the wire as Hermes' `a2a_call` tool does.

hermes-agent 0.19.0 on PyPI does not ship the bundled A2A plugin (plugins/platforms/a2a),
so the suite replays its documented client behaviour, written from its description:

- fetch the card at <url>/.well-known/agent-card.json; post to its JSONRPC interface;
- one v1 Message per call: a fresh messageId, the caller's context id, no taskId;
- when the card says streaming: SendStreamingMessage with a 30 s idle read timeout,
  reading until a terminal state (completed, failed, canceled, rejected; input-required
  is NOT terminal for it); if the stream times out or ends without one, it sends the
  very same body again as SendMessage (a blocking call);
- a follow-up carries only `context_id`.

    python a2a_call_client.py <agent url> <message> [context_id]

prints one JSON line: {"reply", "context_id", "state", "fell_back", "events"}.
"""

from __future__ import annotations

import json
import socket
import sys
import urllib.request
import uuid

READ_TIMEOUT = 30.0
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}


def post(url: str, body: dict, accept: str, timeout: float):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
        "content-type": "application/json", "accept": accept, "a2a-version": "1.0"})
    return urllib.request.urlopen(request, timeout=timeout)


def text_of(task: dict) -> str:
    for artifact in task.get("artifacts") or []:
        text = "".join(p.get("text", "") for p in artifact.get("parts") or [])
        if text:
            return text
    message = (task.get("status") or {}).get("message") or {}
    return "".join(p.get("text", "") for p in message.get("parts") or [])


def main() -> None:
    url, text = sys.argv[1], sys.argv[2]
    context_id = sys.argv[3] if len(sys.argv) > 3 else "ctx-" + uuid.uuid4().hex[:16]
    with urllib.request.urlopen(url.rstrip("/") + "/.well-known/agent-card.json", timeout=30) as r:
        card = json.loads(r.read())
    rpc = next((i["url"] for i in card.get("supportedInterfaces") or [] if i.get("protocolBinding") == "JSONRPC"), url)
    body = {"jsonrpc": "2.0", "id": "task-" + uuid.uuid4().hex[:16], "method": "SendMessage", "params": {
        "message": {"role": "ROLE_USER", "parts": [{"text": text, "mediaType": "text/plain"}],
                    "messageId": uuid.uuid4().hex, "contextId": context_id}}}
    events, result, fell_back = 0, None, False
    if (card.get("capabilities") or {}).get("streaming"):
        try:
            with post(rpc, dict(body, method="SendStreamingMessage"), "text/event-stream", READ_TIMEOUT) as resp:
                for raw in resp:
                    line = raw.decode().strip()
                    if not line.startswith("data:"):
                        continue
                    frame = json.loads(line[5:])
                    events += 1
                    candidate = frame.get("result") or {}
                    task = candidate.get("task") or {}
                    if task:
                        result = task
                    if (task.get("status") or {}).get("state") in TERMINAL:
                        break
                else:
                    result = result if result and result["status"]["state"] in TERMINAL else None
        except (socket.timeout, TimeoutError, OSError):
            result = None
    if result is None or result["status"]["state"] not in TERMINAL:
        fell_back = True
        with post(rpc, body, "application/json", 500) as resp:
            answer = json.loads(resp.read())
        if answer.get("error"):
            print(json.dumps({"error": answer["error"], "fell_back": True}))
            return
        result = answer["result"].get("task") or answer["result"]
    print(json.dumps({"reply": text_of(result), "context_id": result.get("contextId"),
                      "state": result["status"]["state"], "fell_back": fell_back, "events": events}))


if __name__ == "__main__":
    main()
