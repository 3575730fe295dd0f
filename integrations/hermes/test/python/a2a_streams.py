"""Streams one message through the A2A gateway with a published a2a-sdk client, unchanged.

    python a2a_streams.py v0.3 <agent url> <text>   # a2a-sdk 0.3.x: message/stream
    python a2a_streams.py v1.0 <agent url> <text>   # a2a-sdk 1.x: SendStreamingMessage

Prints one JSON line per event the client hands out, {"op": "event", "kind", "state",
"final"?}, then {"op": "done", "ok": true} when the stream ended, or {"op": "done",
"ok": false, "error"} when the client raised.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid


def emit(**line) -> None:
    print(json.dumps(line, default=str), flush=True)


async def stream_v03(url: str, text: str) -> None:
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, TextPart

    async with httpx.AsyncClient(timeout=60) as http:
        client = await ClientFactory.connect(url, ClientConfig(streaming=True, httpx_client=http))
        message = Message(message_id=uuid.uuid4().hex, role=Role.user, parts=[Part(root=TextPart(text=text))])
        # The client's task manager raises on a second Task in one stream ("Task is already set").
        async for event in client.send_message(message):
            if isinstance(event, Message):
                emit(op="event", kind="message")
                continue
            task, update = event
            if update is None:
                emit(op="event", kind="task", state=task.status.state.value)
            elif update.kind == "status-update":
                emit(op="event", kind=update.kind, state=update.status.state.value, final=update.final)
            else:
                emit(op="event", kind=update.kind, state=task.status.state.value)


async def stream_v1(url: str, text: str) -> None:
    import httpx
    from a2a.client import ClientConfig, create_client
    from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(url, ClientConfig(streaming=True, httpx_client=http))
        request = SendMessageRequest(
            message=Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[Part(text=text)])
        )
        async for event in client.send_message(request):
            kind = event.WhichOneof("payload")
            body = getattr(event, kind)
            state = TaskState.Name(body.status.state) if kind in ("task", "status_update") else None
            emit(op="event", kind=kind, state=state)


def main() -> None:
    version, url, text = sys.argv[1:4]
    runner = {"v0.3": stream_v03, "v1.0": stream_v1}[version]
    try:
        asyncio.run(runner(url, text))
    except Exception as err:  # the point is to record what the client does
        emit(op="done", ok=False, error=f"{type(err).__name__}: {err}")
        return
    emit(op="done", ok=True)


if __name__ == "__main__":
    main()
