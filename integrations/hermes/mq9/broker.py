"""The broker connection: mq9 requests over nats-py, on an event loop of its own thread.

Hermes calls tools and hooks from plain threads; every public method here is
synchronous and runs its request on the connection's loop.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import json
import logging
import threading
from typing import Any, Optional

import nats
from nats.aio.client import Client as NATS

logger = logging.getLogger(__name__)

PREFIX = "$mq9.AI"


class Mq9Error(Exception):
    """The broker answered with an error (its text is the message), or did not answer."""


class Message:
    """One message from FETCH: id, decoded headers and payload bytes."""

    def __init__(self, item: dict):
        self.msg_id: int = item["msg_id"]
        self.headers: dict[str, str] = {k.lower(): v for k, v in (item.get("headers") or {}).items()}
        self.payload: bytes = base64.b64decode(item.get("payload") or "")
        self.priority: str = item.get("priority") or "normal"

    def json(self) -> Any:
        return json.loads(self.payload.decode("utf-8"))


class Broker:
    """A connection to an mq9 broker; `run` executes a coroutine on its loop."""

    def __init__(self, server: str, token: Optional[str] = None, name: str = "hermes-mq9",
                 request_timeout: float = 10.0):
        self.server = server
        self.token = token
        self.name = name
        self.request_timeout = request_timeout
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="mq9-broker", daemon=True)
        self._thread.start()
        self._spawned: set = set()
        self.nc: Any = None
        # Hermes may exit without ending the session: end the loop's tasks before Python
        # destroys them half-run (it would print "Task was destroyed but it is pending!").
        atexit.register(self.shutdown)

    # -- plumbing -----------------------------------------------------------

    def run(self, coro, timeout: Optional[float] = None) -> Any:
        """Runs `coro` on the connection's loop and waits for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def spawn(self, coro) -> "asyncio.Future":
        """Runs `coro` in the background on the loop; `shutdown` cancels it if it still runs."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        self._spawned.add(future)
        future.add_done_callback(self._spawned.discard)
        return future

    async def connect(self) -> None:
        """Connects once; a broker that cannot be reached (or refuses us) is an Mq9Error, not a retry loop."""
        if self.nc is not None and not self.nc.is_closed:
            return
        client = NATS()
        errors: list[Exception] = []
        failed = asyncio.Event()

        async def on_error(err: Exception) -> None:
            # Before the first connection, any error ends the attempt: nats-py would retry forever.
            errors.append(err)
            logger.debug("mq9: %s", err)
            if self.nc is not client:
                failed.set()

        options: dict[str, Any] = {"name": self.name, "max_reconnect_attempts": -1, "reconnect_time_wait": 1,
                                   "connect_timeout": 5, "error_cb": on_error}
        if self.token:
            options["token"] = self.token
        connecting = asyncio.ensure_future(client.connect(self.server, **options))
        waiting = asyncio.ensure_future(failed.wait())
        try:
            done, _ = await asyncio.wait({connecting, waiting}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
            if connecting not in done:
                connecting.cancel()
                raise TimeoutError("no answer in 10 s")
            connecting.result()
        except Exception as err:
            try:
                await client.close()
            except Exception:
                pass
            cause = errors[-1] if errors else err
            raise Mq9Error(f"cannot connect to the mq9 broker at {self.server}: {cause or type(cause).__name__}") from err
        finally:
            waiting.cancel()
        self.nc = client

    async def close(self) -> None:
        if self.nc is not None:
            try:
                await self.nc.drain()
            except Exception:
                pass
            self.nc = None

    async def _end_tasks(self) -> None:
        """Cancels what `spawn` started, closes the connection, then cancels whatever is left."""
        for future in list(self._spawned):
            future.cancel()
        await self.close()
        current = asyncio.current_task()
        rest = [task for task in asyncio.all_tasks() if task is not current]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    def shutdown(self) -> None:
        """Ends every task of the loop, then the loop and its thread; a second call does nothing."""
        if self.loop.is_closed() or not self._thread.is_alive():
            return
        try:
            self.run(self._end_tasks(), 10)
        except Exception as err:
            logger.debug("mq9: shutdown: %s", err)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
            if not self._thread.is_alive():
                self.loop.close()
            atexit.unregister(self.shutdown)

    async def request(self, subject: str, body: Any = None, headers: Optional[dict] = None,
                      timeout: Optional[float] = None) -> dict:
        """One mq9 request; an `error` in the reply raises Mq9Error with its text."""
        await self.connect()
        data = body if isinstance(body, bytes) else json.dumps({} if body is None else body).encode()
        try:
            reply = await self.nc.request(subject, data, timeout=timeout or self.request_timeout,
                                          headers=headers)
        except nats.errors.NoRespondersError as err:
            raise Mq9Error(f"no mq9 broker answers on {self.server}") from err
        except asyncio.TimeoutError as err:
            raise Mq9Error(f"the broker at {self.server} did not answer {subject} in time") from err
        answer = json.loads(reply.data or b"{}")
        if answer.get("error"):
            raise Mq9Error(answer["error"])
        return answer

    # -- mq9 operations (coroutines) -----------------------------------------

    async def create_mailbox(self, name: str, ttl: int = 0, desc: str = "") -> str:
        """Creates the mailbox, or reuses it when it already exists."""
        try:
            answer = await self.request(f"{PREFIX}.MAILBOX.CREATE", {"name": name, "ttl": ttl, "desc": desc})
            return answer["mail_address"]
        except Mq9Error as err:
            if "already exists" in str(err):
                return name
            raise

    async def send(self, mailbox: str, payload: Any, headers: Optional[dict] = None) -> int:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        answer = await self.request(f"{PREFIX}.MSG.SEND.{mailbox}", data, headers=headers)
        return answer["msg_id"]

    async def fetch(self, mailbox: str, group: str, num_msgs: int = 10, max_wait_ms: int = 5000,
                    lease_ms: Optional[int] = None) -> list[Message]:
        config: dict[str, Any] = {"num_msgs": num_msgs, "max_wait_ms": max_wait_ms}
        if lease_ms is not None:
            config["lease_ms"] = lease_ms
        answer = await self.request(
            f"{PREFIX}.MSG.FETCH.{mailbox}",
            {"group_name": group, "deliver": "earliest", "config": config},
            timeout=max_wait_ms / 1000 + self.request_timeout,
        )
        return [Message(item) for item in answer.get("messages") or []]

    async def ack(self, mailbox: str, group: str, msg_id: int) -> None:
        await self.request(f"{PREFIX}.MSG.ACK.{mailbox}",
                           {"group_name": group, "mail_address": mailbox, "msg_id": msg_id})

    async def register(self, body: dict) -> None:
        await self.request(f"{PREFIX}.AGENT.REGISTER", body)

    async def report(self, name: str, mailbox: str, info: str) -> None:
        await self.request(f"{PREFIX}.AGENT.REPORT", {"name": name, "mailbox": mailbox, "report_info": info})

    async def unregister(self, mailbox: str) -> None:
        await self.request(f"{PREFIX}.AGENT.UNREGISTER", {"mailbox": mailbox})

    async def discover(self, semantic: Optional[str] = None, text: Optional[str] = None,
                       tags: Optional[list[str]] = None, limit: int = 10) -> list[dict]:
        body: dict[str, Any] = {"limit": limit}
        if semantic:
            body["semantic"] = semantic
        if text:
            body["text"] = text
        if tags:
            body["tags"] = tags
        answer = await self.request(f"{PREFIX}.AGENT.DISCOVER", body)
        return answer.get("agents") or []
