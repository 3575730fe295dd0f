"""The published Python `mcp` and `nats-py` clients, unchanged, against `mq9 serve`.

    python mcp_nats_clients.py mcp  <mq9 url> <http url> <mailbox prefix>
    python mcp_nats_clients.py nats <mq9 url> <mailbox>

Prints one JSON line per operation: {"op", "ok", "result" | "error"}, then {"op": "done"}.
"""

from __future__ import annotations

import asyncio
import json
import sys

from published_clients import attempt, emit, nats_url


async def mcp_session_ops(label: str, session, mailbox: str) -> None:
    await session.initialize()
    tools = await session.list_tools()
    emit(f"{label} tools", True, sorted(t.name for t in tools.tools))

    async def call(op: str, name: str, args: dict):
        async def run():
            result = await session.call_tool(name, args)
            if result.isError:
                raise RuntimeError(result.content[0].text)
            return result.structuredContent

        return await attempt(f"{label} {op}", run())

    await call("create", "mq9_create_mailbox", {"name": mailbox, "ttl": 600})
    await call("send normal", "mq9_send_message", {"mail_address": mailbox, "payload": "second"})
    await call("send critical", "mq9_send_message",
               {"mail_address": mailbox, "payload": "first", "priority": "critical"})
    await call("fetch", "mq9_fetch_messages", {"mail_address": mailbox, "group_name": "py", "max_wait_ms": 0})
    await call("send to a bad name", "mq9_send_message", {"mail_address": "Bad Name", "payload": "x"})
    await call("discover", "mq9_discover_agents", {"text": "nobody-is-called-this"})


async def mcp(url: str, http: str, prefix: str) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    params = StdioServerParameters(command="mq9", args=["mcp", "--server", url])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await mcp_session_ops("stdio", session, f"{prefix}.stdio")
    async with streamablehttp_client(f"{http}/mcp") as (read, write, _), ClientSession(read, write) as session:
        await mcp_session_ops("http", session, f"{prefix}.http")


async def nats_ops(url: str, mailbox: str) -> None:
    import nats

    nc = await nats.connect(nats_url(url))

    async def request(op: str, subject: str, body: bytes, headers: dict | None = None):
        async def run():
            reply = await nc.request(subject, body, timeout=5, headers=headers)
            return json.loads(reply.data)

        return await attempt(op, run())

    await request("create", "$mq9.AI.MAILBOX.CREATE", json.dumps({"name": mailbox, "ttl": 600}).encode())
    await request("send normal", f"$mq9.AI.MSG.SEND.{mailbox}", b"second")
    await request("send critical", f"$mq9.AI.MSG.SEND.{mailbox}", b"first",
                  {"mq9-priority": "critical", "mq9-key": "k1", "mq9-tags": "a,b"})
    fetched = await request("fetch", f"$mq9.AI.MSG.FETCH.{mailbox}",
                            json.dumps({"group_name": "py", "deliver": "earliest",
                                        "config": {"num_msgs": 10, "max_wait_ms": 0}}).encode())
    last = fetched["messages"][-1]["msg_id"] if fetched and fetched.get("messages") else 0
    await request("ack", f"$mq9.AI.MSG.ACK.{mailbox}",
                  json.dumps({"group_name": "py", "mail_address": mailbox, "msg_id": last}).encode())
    await request("fetch after ack", f"$mq9.AI.MSG.FETCH.{mailbox}",
                  json.dumps({"group_name": "py", "deliver": "earliest",
                              "config": {"num_msgs": 10, "max_wait_ms": 0}}).encode())
    await request("malformed json", f"$mq9.AI.MSG.FETCH.{mailbox}", b"{not json")
    await request("unknown subject", "$mq9.AI.MSG.NOPE.x", b"{}")
    await nc.drain()


def main() -> None:
    mode, *args = sys.argv[1:]
    try:
        asyncio.run({"mcp": mcp, "nats": nats_ops}[mode](*args))
    finally:
        print(json.dumps({"op": "done"}), flush=True)


if __name__ == "__main__":
    main()
