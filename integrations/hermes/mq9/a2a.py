"""A2A over mq9 mailboxes, as plain JSON (no a2a-sdk): the caller side and the inbox server.

The binding: a JSON-RPC 2.0 request goes to the agent's inbox with the caller's reply
mailbox in `mq9-reply-to` and a correlation id in `mq9-a2a-request-id`; every response
goes to that mailbox with the same id, the last one marked `mq9-a2a-last: true`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, Callable, Optional

from .broker import Broker, Message, Mq9Error

logger = logging.getLogger(__name__)

REPLY_TO, REQUEST_ID, METHOD = "mq9-reply-to", "mq9-a2a-request-id", "mq9-a2a-method"
TYPE, LAST, TASK_ID, VERSION = "mq9-a2a-type", "mq9-a2a-last", "mq9-a2a-task-id", "a2a-version"

INPUT_REQUIRED_MARKER = "[INPUT_REQUIRED]"
_FINAL = {"completed", "failed", "canceled", "rejected", "input-required", "auth-required"}
_SEND = {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}


class Bounded(OrderedDict):
    """A dict that forgets its oldest entries past `limit` (calls, tasks and contexts are kept in memory)."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def __setitem__(self, key, value) -> None:
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


def short_state(state: str) -> str:
    """TASK_STATE_INPUT_REQUIRED → input-required (v0.3 names pass through)."""
    return (state or "").replace("TASK_STATE_", "").replace("_", "-").lower()


def _v1_state(state: str) -> str:
    return "TASK_STATE_" + state.upper().replace("-", "_")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parts_text(parts: Any) -> str:
    return "".join(p.get("text", "") for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str))


# -- caller side ------------------------------------------------------------


class _Call:
    def __init__(self, call_id: str, target: str):
        self.call_id = call_id
        self.target = target
        self.responses: list[dict] = []
        self.done = threading.Event()
        self.task_id: Optional[str] = None
        self.started = time.time()


def summarize(responses: list[dict]) -> dict:
    """What a caller wants from an agent's responses: state, text, artifacts, ids."""
    out: dict[str, Any] = {"state": "submitted", "text": "", "artifacts": []}
    for response in responses:
        if response.get("error"):
            out.update(state="failed", error=response["error"].get("message", str(response["error"])))
            continue
        result = response.get("result")
        if not isinstance(result, dict):
            continue
        if isinstance(result.get("artifactUpdate"), dict):
            art = result["artifactUpdate"].get("artifact") or {}
            out["artifacts"].append(parts_text(art.get("parts")))
            continue
        task = result.get("task") if isinstance(result.get("task"), dict) else None
        if task is None and isinstance(result.get("statusUpdate"), dict):
            task = {"status": result["statusUpdate"].get("status"), "id": result["statusUpdate"].get("taskId"),
                    "contextId": result["statusUpdate"].get("contextId")}
        if task is None and isinstance(result.get("message"), dict):
            msg = result["message"]
            out.update(state="completed", text=parts_text(msg.get("parts")), context_id=msg.get("contextId"))
            continue
        if task is None and "status" in result:
            task = result  # v0.3: the Task itself
        if task is None:
            continue
        status = task.get("status") or {}
        out["state"] = short_state(status.get("state", "")) or out["state"]
        if task.get("id"):
            out["task_id"] = task["id"]
        if task.get("contextId"):
            out["context_id"] = task["contextId"]
        if isinstance(status.get("message"), dict):
            out["text"] = parts_text(status["message"].get("parts"))
        if task.get("artifacts"):
            out["artifacts"] = [parts_text(a.get("parts")) for a in task["artifacts"]]
    return out


class Caller:
    """Sends A2A requests from a reply mailbox of ours and collects the responses by id.

    Responses stay in the reply mailbox until read, so a call that timed out (the
    agent offline, or slow) completes later: `wait` on its call id or task id.
    """

    GROUP = "hermes.caller"

    def __init__(self, broker: Broker, reply_mailbox: str):
        self.broker = broker
        self.reply_mailbox = reply_mailbox
        self._calls: dict[str, _Call] = Bounded(2_000)
        self._by_task: dict[str, str] = Bounded(2_000)
        self._lock = threading.Lock()
        self._loop_future = None
        self._stopped = False

    def start(self) -> None:
        self.broker.run(self.broker.create_mailbox(self.reply_mailbox, 0, "replies to a Hermes agent's A2A calls"), 15)
        self._loop_future = self.broker.spawn(self._consume())

    def stop(self) -> None:
        self._stopped = True

    async def _consume(self) -> None:
        while not self._stopped:
            try:
                messages = await self.broker.fetch(self.reply_mailbox, self.GROUP, 50, 2000)
            except Exception as err:  # connection trouble: try again shortly
                logger.debug("mq9: reply fetch failed: %s", err)
                await asyncio.sleep(1)
                continue
            for message in messages:
                self._route(message)
            if messages:
                await self.broker.ack(self.reply_mailbox, self.GROUP, messages[-1].msg_id)

    def _route(self, message: Message) -> None:
        call_id = message.headers.get(REQUEST_ID)
        try:
            response = message.json()
        except Exception:
            return
        with self._lock:
            call = self._calls.get(call_id or "")
            if call is None:  # from an earlier run: keep it, someone may ask
                call = self._calls[call_id or str(message.msg_id)] = _Call(call_id or "", "")
            call.responses.append(response)
            task_id = message.headers.get(TASK_ID) or summarize([response]).get("task_id")
            if task_id:
                call.task_id = task_id
                self._by_task[task_id] = call.call_id
            if message.headers.get(LAST) == "true":
                call.done.set()

    def send(self, mailbox: str, text: str, *, context_id: Optional[str] = None,
             task_id: Optional[str] = None, method: str = "SendMessage") -> str:
        """Sends one message; returns the call id the responses will carry."""
        call_id = uuid.uuid4().hex
        message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
        if context_id:
            message["contextId"] = context_id
        if task_id:
            message["taskId"] = task_id
        with self._lock:
            self._calls[call_id] = _Call(call_id, mailbox)
        request = {"jsonrpc": "2.0", "id": call_id, "method": method, "params": {"message": message}}
        headers = {REPLY_TO: self.reply_mailbox, REQUEST_ID: call_id, METHOD: method, VERSION: "1.0"}
        self.broker.run(self.broker.send(mailbox, request, headers), 15)
        return call_id

    def wait(self, ref: str, timeout: float) -> Optional[dict]:
        """The call's state after waiting up to `timeout` s for its last response; None if unknown."""
        with self._lock:
            call = self._calls.get(ref) or self._calls.get(self._by_task.get(ref, ""))
        if call is None:
            return None
        call.done.wait(max(0.0, timeout))
        with self._lock:
            out = summarize(call.responses)
        out["call_id"] = call.call_id
        if call.target:
            out["agent"] = call.target
        if not call.done.is_set():
            out["state"] = out["state"] if call.responses else "submitted"
            out["pending"] = True
        return out


# -- server side ------------------------------------------------------------

Answer = Callable[[str, list, str], tuple[str, list]]
"""answer(text, history, context_id) -> (reply text, new history); runs in a worker thread."""


class InboxServer:
    """Serves A2A requests from this agent's inbox with `answer`, replying to each caller."""

    GROUP = "hermes.tasks"

    def __init__(self, broker: Broker, mailbox: str, answer: Answer, *, concurrency: int = 1,
                 task_timeout: float = 900.0):
        self.broker = broker
        self.mailbox = mailbox
        self.answer = answer
        self.concurrency = concurrency
        self.task_timeout = task_timeout
        self.tasks: dict[str, dict] = Bounded(1_000)
        self.histories: dict[str, list] = Bounded(200)
        self.processed = 0
        self._stopped = False
        self._future = None

    def start(self) -> None:
        self._stopped = False
        self._future = self.broker.spawn(self._serve())

    def stop(self) -> None:
        self._stopped = True

    async def _serve(self) -> None:
        lease_ms = int((self.task_timeout + 60) * 1000)
        while not self._stopped:
            try:
                messages = await self.broker.fetch(self.mailbox, self.GROUP, self.concurrency, 2000, lease_ms)
            except Exception as err:
                logger.debug("mq9: inbox fetch failed: %s", err)
                await asyncio.sleep(1)
                continue
            if not messages:
                continue
            await asyncio.gather(*(self._handle(m) for m in messages))
            await self.broker.ack(self.mailbox, self.GROUP, messages[-1].msg_id)

    async def _reply(self, incoming: dict, response: dict, last: bool, task_id: Optional[str] = None) -> None:
        reply_to = incoming.get("reply_to")
        if not reply_to:
            return
        headers = {REQUEST_ID: incoming["request_id"], TYPE: "Error" if "error" in response else "Task"}
        if task_id:
            headers[TASK_ID] = task_id
        if last:
            headers[LAST] = "true"
        try:
            await self.broker.send(reply_to, response, headers)
        except Mq9Error as err:
            logger.warning("mq9: could not reply to %s: %s", reply_to, err)

    async def _handle(self, message: Message) -> None:
        incoming = {"reply_to": message.headers.get(REPLY_TO),
                    "request_id": message.headers.get(REQUEST_ID) or str(message.msg_id)}
        try:
            body = message.json()
        except Exception as err:
            await self._reply(incoming, _error(None, -32700, f"Invalid JSON payload: {err}"), True)
            return
        if not isinstance(body, dict):
            await self._reply(incoming, _error(None, -32600, "not an A2A request"), True)
            return
        if body.get("jsonrpc") != "2.0":  # a bare A2A object (SDK style)
            body = {"jsonrpc": "2.0", "id": incoming["request_id"],
                    "method": message.headers.get(METHOD) or "SendMessage", "params": body}
        rid, method, params = body.get("id"), str(body.get("method") or ""), body.get("params") or {}
        legacy = message.headers.get(VERSION, "").startswith("0.") or "/" in method
        try:
            if method in _SEND:
                await self._send(incoming, rid, params, legacy)
            elif method in ("GetTask", "tasks/get"):
                task = self.tasks.get(str(params.get("id")))
                response = _result(rid, _wire(task, legacy)) if task else _error(rid, -32001, "Task not found")
                await self._reply(incoming, response, True)
            elif method in ("CancelTask", "tasks/cancel"):
                await self._cancel(incoming, rid, params, legacy)
            else:
                await self._reply(incoming, _error(rid, -32601, f"Method not found: {method}"), True)
        except Exception as err:  # never leave a caller waiting
            logger.exception("mq9: request failed")
            await self._reply(incoming, _error(rid, -32603, str(err)), True)

    async def _send(self, incoming: dict, rid: Any, params: dict, legacy: bool) -> None:
        message = params.get("message") or {}
        text = parts_text(message.get("parts"))
        task = self.tasks.get(str(message.get("taskId") or ""))
        if message.get("taskId") and task is None:
            await self._reply(incoming, _error(rid, -32001, f"Task not found: {message['taskId']}"), True)
            return
        if task is not None and task["state"] not in ("input-required", "auth-required"):
            await self._reply(incoming, _error(rid, -32004, f"task {task['id']} is {task['state']}: it takes no more messages"), True)
            return
        if task is None:
            context_id = message.get("contextId") or uuid.uuid4().hex
            task = {"id": uuid.uuid4().hex, "contextId": context_id, "state": "working", "text": "", "artifacts": []}
            self.tasks[task["id"]] = task
        task["state"] = "working"
        await self._reply(incoming, _event(rid, task, legacy), False, task["id"])
        loop = asyncio.get_running_loop()
        history = self.histories.get(task["contextId"], [])
        try:
            reply, history = await asyncio.wait_for(
                loop.run_in_executor(None, self.answer, text, history, task["contextId"]), self.task_timeout)
            self.histories[task["contextId"]] = history
            if reply.strip().startswith(INPUT_REQUIRED_MARKER):
                task.update(state="input-required", text=reply.strip()[len(INPUT_REQUIRED_MARKER):].strip())
            elif task["state"] != "canceled":
                task.update(state="completed", text="", artifacts=[reply])
        except asyncio.TimeoutError:
            task.update(state="failed", text=f"the task ran longer than {self.task_timeout:.0f} s")
        except Exception as err:
            task.update(state="failed", text=f"the agent failed: {err}")
        self.processed += 1
        await self._reply(incoming, _event(rid, task, legacy), True, task["id"])

    async def _cancel(self, incoming: dict, rid: Any, params: dict, legacy: bool) -> None:
        task = self.tasks.get(str(params.get("id")))
        if task is None:
            await self._reply(incoming, _error(rid, -32001, "Task not found"), True)
        elif task["state"] in ("completed", "failed", "canceled", "rejected"):
            await self._reply(incoming, _error(rid, -32002, f"task {task['id']} is {task['state']}: it cannot be canceled"), True)
        else:
            task["state"] = "canceled"
            await self._reply(incoming, _result(rid, _wire(task, legacy)), True, task["id"])


def _result(rid: Any, result: Any) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _error(rid: Any, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def _wire(task: dict, legacy: bool) -> dict:
    """A stored task as A2A JSON (v1.0, or v0.3 with `kind` tags and lowercase states)."""
    part = (lambda text: {"kind": "text", "text": text}) if legacy else (lambda text: {"text": text})
    status: dict[str, Any] = {"state": task["state"] if legacy else _v1_state(task["state"]), "timestamp": _now()}
    if task["text"]:
        status["message"] = {"messageId": uuid.uuid4().hex, "role": "agent" if legacy else "ROLE_AGENT",
                             "parts": [part(task["text"])], "contextId": task["contextId"], "taskId": task["id"]}
        if legacy:
            status["message"]["kind"] = "message"
    out: dict[str, Any] = {"id": task["id"], "contextId": task["contextId"], "status": status}
    if task["artifacts"]:
        out["artifacts"] = [{"artifactId": f"{task['id']}-{i}", "name": "answer", "parts": [part(text)]}
                            for i, text in enumerate(task["artifacts"])]
    if legacy:
        out["kind"] = "task"
    return out


def _event(rid: Any, task: dict, legacy: bool) -> dict:
    """A stream event carrying the task: `{task}` in v1.0, the Task itself in v0.3."""
    wire = _wire(task, legacy)
    return _result(rid, wire if legacy else {"task": wire})
