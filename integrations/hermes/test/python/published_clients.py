"""The published Python clients, unchanged, against `mq9 serve`: what each operation does.

    python published_clients.py robustmq  <mq9 url> <existing mailbox>
    python published_clients.py langchain <mq9 url> <existing mailbox>
    python published_clients.py a2a-sdk   <agent url> <slow agent url>

Prints one JSON line per operation: {"op", "ok", "result" | "error"}.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid


def emit(op: str, ok: bool, value) -> None:
    key = "result" if ok else "error"
    print(json.dumps({"op": op, "ok": ok, key: value}, default=str), flush=True)


async def attempt(op: str, coro):
    try:
        value = await coro
        emit(op, True, value)
        return value
    except Exception as err:  # the point is to record what happens
        emit(op, False, f"{type(err).__name__}: {err}")
        return None


def nats_url(mq9: str) -> str:
    return mq9.replace("mq9://", "nats://", 1)


async def robustmq(url: str, mailbox: str) -> None:
    from robustmq.mq9 import Client

    client = Client(server=nats_url(url), request_timeout=3)
    await attempt("connect", client.connect())
    await attempt("create", client.create(ttl=60))
    await attempt("create public", client.create(ttl=60, public=True, name=f"public.{uuid.uuid4().hex[:8]}"))
    received = []

    async def handler(msg):
        received.append(msg.payload)

    await attempt("subscribe", client.subscribe(mailbox, handler))
    for priority in ("high", "normal", "low"):
        await attempt(f"send {priority}", client.send(mailbox, f"from robustmq ({priority})", priority=priority))
    await asyncio.sleep(1)
    emit("messages pushed to subscribe", True, len(received))
    await attempt("list", client.list(mailbox))
    await attempt("delete", client.delete(mailbox, "1"))
    await attempt("close", client.close())


async def langchain(url: str, mailbox: str) -> None:
    from langchain_mq9 import tools

    names = [n for n in dir(tools) if n.endswith("Tool") and n != "BaseTool"]
    emit("tools", True, sorted(names))
    calls = {
        "CreateMailboxTool": {"ttl": 60},
        "CreatePublicMailboxTool": {"name": f"lc.{uuid.uuid4().hex[:8]}", "ttl": 60},
        "SendMessageTool": {"mail_id": mailbox, "content": "from langchain", "priority": "normal"},
        "GetMessagesTool": {"mail_id": mailbox, "limit": 1},
        "ListMessagesTool": {"mail_id": mailbox},
        "DeleteMessageTool": {"mail_id": mailbox, "msg_id": "1"},
    }
    for name, args in calls.items():
        tool = getattr(tools, name)(server=nats_url(url))
        await attempt(name, asyncio.wait_for(tool.ainvoke(args), 15))


async def a2a_sdk(agent_url: str, slow_url: str) -> None:
    import httpx
    from a2a.client import ClientConfig, create_client
    from a2a.types import CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest
    from google.protobuf.json_format import MessageToDict

    def request(text: str, **config) -> SendMessageRequest:
        req = SendMessageRequest(message=Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER,
                                                 parts=[Part(text=text)]))
        for key, value in config.items():
            setattr(req.configuration, key, value)
        return req

    async with httpx.AsyncClient(timeout=60) as http:
        blocking = await create_client(agent_url, ClientConfig(streaming=False, httpx_client=http))
        streaming = await create_client(agent_url, ClientConfig(streaming=True, httpx_client=http))
        task = None
        async for event in blocking.send_message(request("bonjour")):
            task = event.task
        emit("send", True, MessageToDict(task))
        events = []
        async for event in streaming.send_message(request("stream me")):
            events.append(MessageToDict(event))
        emit("stream", True, events)
        await attempt("get", _dict(blocking.get_task(GetTaskRequest(id=task.id))))
        slow = await create_client(slow_url, ClientConfig(streaming=False, httpx_client=http))
        started = None
        async for event in slow.send_message(request("work until canceled", return_immediately=True)):
            started = event.task
        emit("send non-blocking", True, MessageToDict(started))
        await attempt("cancel", _dict(slow.cancel_task(CancelTaskRequest(id=started.id))))
        await attempt("cancel again", _dict(slow.cancel_task(CancelTaskRequest(id=started.id))))
        await attempt("cancel completed", _dict(blocking.cancel_task(CancelTaskRequest(id=task.id))))
        await attempt("get unknown", _dict(blocking.get_task(GetTaskRequest(id="no-such-task"))))


async def _dict(coro):
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(await coro)


def main() -> None:
    mode, *args = sys.argv[1:]
    runner = {"robustmq": robustmq, "langchain": langchain, "a2a-sdk": a2a_sdk}[mode]
    asyncio.run(runner(*args))
    print(json.dumps({"op": "done", "ok": True}), flush=True)


if __name__ == "__main__":
    main()
