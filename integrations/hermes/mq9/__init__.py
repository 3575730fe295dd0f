"""mq9 for Hermes Agent: this Hermes as an addressable agent on an mq9 broker.

With a broker configured (`MQ9_SERVER`, or `plugins.entries.mq9.settings.server`), a
session start connects, creates or reuses this agent's inbox, registers an AgentCard
derived from its toolsets and skills, heartbeats, and serves A2A tasks arriving in the
inbox in the background; the session's end unregisters. The model gets the tools
mq9_discover, mq9_call, mq9_task, mq9_register, mq9_unregister and mq9_status.
Without a broker the plugin registers nothing and does nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any, Optional

from .a2a import Caller, InboxServer
from .agent_runner import answer_with_hermes, warm_up
from .broker import Broker, Mq9Error
from .card import derive_card, enabled_toolsets, installed_skills
from .settings import Settings, load_settings

logger = logging.getLogger(__name__)

TOOLSET = "mq9"


class Mq9Plugin:
    """The plugin's state: one broker connection, the caller's reply mailbox, the inbox server."""

    def __init__(self, settings: Settings, answer=None):
        self.settings = settings
        self.answer = answer or (lambda text, history, ctx: answer_with_hermes(
            text, history, ctx, toolsets=settings.toolsets))
        self.broker: Optional[Broker] = None
        self.caller: Optional[Caller] = None
        self.server: Optional[InboxServer] = None
        self.card: Optional[dict] = None
        self.registered = False
        self._heartbeat = None
        self._lock = threading.RLock()

    # -- lifecycle ---------------------------------------------------------

    @property
    def mailbox(self) -> str:
        return self.settings.agent_id

    def connect(self) -> Broker:
        with self._lock:
            if self.broker is None:
                self.broker = Broker(self.settings.server, self.settings.token, name=f"hermes-{self.mailbox}")
            self.broker.run(self.broker.connect(), 15)
            if self.caller is None:
                self.caller = Caller(self.broker, f"{self.mailbox}.replies")
                self.caller.start()
            return self.broker

    def start(self) -> None:
        """Session start: inbox, registration, heartbeat and the inbox server (each once)."""
        with self._lock:
            broker = self.connect()
            if not self.settings.register:
                return
            broker.run(broker.create_mailbox(self.mailbox, 0, f"A2A inbox of Hermes agent {self.mailbox}"), 15)
            if not self.registered:
                self.register()
            if self.settings.serve and self.server is None:
                self.server = InboxServer(broker, self.mailbox, self.answer,
                                          concurrency=self.settings.concurrency,
                                          task_timeout=self.settings.task_timeout)
                self.server.start()
                threading.Thread(target=warm_up, name="mq9-warm-up", daemon=True).start()

    def stop(self) -> None:
        """Session end: unregister, stop serving and heartbeating, close the connection."""
        with self._lock:
            if self.broker is None:
                return
            try:
                if self.registered:
                    self.unregister()
            except Exception as err:
                logger.warning("mq9: unregister failed: %s", err)
            for part in (self.server, self.caller):
                if part is not None:
                    part.stop()
            self.server = None
            self.caller = None
            self.broker.shutdown()
            self.broker = None

    def build_card(self) -> dict:
        from hermes_cli.config import load_config

        config = load_config() or {}
        host = self.settings.server.split("://", 1)[-1].split("@")[-1]
        return derive_card(self.mailbox, f"mq9://{host}/{self.mailbox}", enabled_toolsets(config),
                           installed_skills(), self.settings.capabilities, self.settings.agent_card)

    def register(self, card_override: Optional[dict] = None) -> dict:
        broker = self.connect()
        with self._lock:
            broker.run(broker.create_mailbox(self.mailbox, 0, f"A2A inbox of Hermes agent {self.mailbox}"), 15)
            card = self.build_card()
            if card_override:
                card.update(card_override)
            self.card = card
            body = {"name": card["name"], "mailbox": self.mailbox,
                    "payload": card.get("description") or card["name"], "agent_card": card,
                    "ttl": self.settings.ttl}
            broker.run(broker.register(body), 15)
            self.registered = True
            if self._heartbeat is None or self._heartbeat.done():
                self._heartbeat = broker.spawn(self._beat())
            return card

    def unregister(self) -> None:
        broker = self.connect()
        with self._lock:
            self.registered = False
            if self._heartbeat is not None:
                self._heartbeat.cancel()
                self._heartbeat = None
            broker.run(broker.unregister(self.mailbox), 15)

    async def _beat(self) -> None:
        interval = max(1.0, self.settings.ttl / 3) if self.settings.ttl > 0 else 30.0
        while self.registered and self.broker is not None:
            await asyncio.sleep(interval)
            processed = self.server.processed if self.server else 0
            try:
                await self.broker.report(self.card["name"], self.mailbox, f"running, processed={processed}")
            except Mq9Error as err:
                if "not found" in str(err):  # expired while we were away: register again
                    body = {"name": self.card["name"], "mailbox": self.mailbox, "payload": self.card["description"],
                            "agent_card": self.card, "ttl": self.settings.ttl}
                    await self.broker.register(body)
            except Exception as err:
                logger.debug("mq9: heartbeat failed: %s", err)

    # -- tools ---------------------------------------------------------------

    def resolve(self, target: str) -> str:
        """An agent name or mailbox → its mailbox (an unknown target is taken as a mailbox address)."""
        broker = self.connect()
        for query in ({"text": target, "limit": 100}, {"limit": 1000}):
            for entry in broker.run(broker.discover(**query), 15):
                if target in (entry.get("name"), entry.get("mailbox")):
                    return entry.get("mailbox") or target
        return target

    def tool_discover(self, args: dict, **_: Any) -> str:
        broker = self.connect()
        query = (args.get("query") or "").strip() or None
        mode = args.get("mode") or "semantic"
        tags = [args["tag"]] if args.get("tag") else None
        limit = int(args.get("limit") or 10)
        agents = broker.run(broker.discover(semantic=query if mode == "semantic" else None,
                                            text=query if mode == "text" else None, tags=tags, limit=limit), 20)
        return json.dumps({"agents": agents})

    def tool_call(self, args: dict, **_: Any) -> str:
        target, message = str(args.get("target") or "").strip(), str(args.get("message") or "")
        if not target or not message:
            return json.dumps({"error": "mq9_call needs 'target' (an agent name or mailbox) and 'message'"})
        timeout = float(args.get("timeout") or self.settings.call_timeout)
        mailbox = self.resolve(target)
        call_id = self.caller.send(mailbox, message, context_id=args.get("context_id") or None,
                                   task_id=args.get("task_id") or None)
        return json.dumps(self._outcome(self.caller.wait(call_id, timeout)))

    def tool_task(self, args: dict, **_: Any) -> str:
        ref = str(args.get("task_id") or "").strip()
        if not ref:
            return json.dumps({"error": "mq9_task needs the 'task_id' that mq9_call returned"})
        self.connect()
        state = self.caller.wait(ref, float(args.get("timeout") or 0))
        if state is None:
            return json.dumps({"error": f"no call with id {ref} in this session"})
        return json.dumps(self._outcome(state))

    @staticmethod
    def _outcome(state: dict) -> dict:
        if state.get("pending"):
            state["task_id"] = state.get("task_id") or state["call_id"]
            state["hint"] = (f"the agent has not finished; call mq9_task with task_id "
                             f"'{state['call_id']}' later to read the result")
        elif state.get("state") == "input-required":
            state["hint"] = ("the agent asks for more input: answer with mq9_call on the same target, "
                             f"task_id '{state.get('task_id')}'")
        return state

    def tool_register(self, args: dict, **_: Any) -> str:
        card = self.register(args.get("agent_card") if isinstance(args.get("agent_card"), dict) else None)
        return json.dumps({"registered": True, "mailbox": self.mailbox, "agent_card": card})

    def tool_unregister(self, args: dict, **_: Any) -> str:
        self.unregister()
        return json.dumps({"unregistered": True, "mailbox": self.mailbox})

    def tool_status(self, args: dict, **_: Any) -> str:
        connected = bool(self.broker and self.broker.nc and self.broker.nc.is_connected)
        return json.dumps({
            "server": self.settings.server, "connected": connected, "mailbox": self.mailbox,
            "registered": self.registered, "serving": self.server is not None,
            "tasks_processed": self.server.processed if self.server else 0,
            "agent_card": self.card,
        })


def _schema(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}


SCHEMAS = {
    "mq9_discover": _schema(
        "mq9_discover",
        "Find agents registered on the mq9 broker by what they can do. Returns their AgentCards as registered.",
        {"query": {"type": "string", "description": "What the agent should be able to do, e.g. 'write Python'"},
         "mode": {"type": "string", "enum": ["semantic", "text"], "description": "semantic (default) or full-text"},
         "tag": {"type": "string", "description": "Only agents carrying this tag"},
         "limit": {"type": "integer", "description": "At most this many agents (default 10)"}},
        []),
    "mq9_call": _schema(
        "mq9_call",
        "Hand a task to another agent through its mq9 mailbox and wait for the result (bounded). "
        "If it is not done in time you get a task_id: read the result later with mq9_task.",
        {"target": {"type": "string", "description": "The agent's name or mailbox (from mq9_discover)"},
         "message": {"type": "string", "description": "The whole task, in plain language"},
         "timeout": {"type": "number", "description": "Seconds to wait (default 60)"},
         "context_id": {"type": "string", "description": "Continue an earlier conversation with this agent"},
         "task_id": {"type": "string", "description": "Answer a task that asked for more input"}},
        ["target", "message"]),
    "mq9_task": _schema(
        "mq9_task",
        "Read back (or wait for) the result of an earlier mq9_call by its task_id.",
        {"task_id": {"type": "string"}, "timeout": {"type": "number", "description": "Seconds to wait (default 0)"}},
        ["task_id"]),
    "mq9_register": _schema(
        "mq9_register", "Register (or refresh) this Hermes agent's AgentCard on the broker.",
        {"agent_card": {"type": "object", "description": "Fields to override in the derived card"}}, []),
    "mq9_unregister": _schema(
        "mq9_unregister", "Remove this Hermes agent from the broker's registry (its inbox stays).", {}, []),
    "mq9_status": _schema(
        "mq9_status", "The broker connection, this agent's mailbox, registration and tasks served.", {}, []),
}

_plugin: Optional[Mq9Plugin] = None


def get_plugin() -> Optional[Mq9Plugin]:
    """The loaded plugin's state (None when no broker is configured)."""
    return _plugin


def _guarded(fn):
    def handler(args: dict, **kwargs: Any) -> str:
        try:
            return fn(args or {}, **kwargs)
        except Exception as err:
            return json.dumps({"error": f"{type(err).__name__}: {err}"})
    return handler


def _hook(fn):
    def callback(**kwargs: Any) -> None:
        try:
            fn()
        except Exception as err:
            logger.warning("mq9: %s failed: %s", fn.__name__, err)
    return callback


def register(ctx) -> None:
    """Hermes' entry point: tools and hooks, only when a broker is configured."""
    global _plugin
    try:
        settings = load_settings()
    except ValueError as err:
        logger.warning("mq9 plugin: %s; the plugin stays off", err)
        return
    if not settings.server:
        return
    _plugin = plugin = Mq9Plugin(settings)
    handlers = {
        "mq9_discover": plugin.tool_discover, "mq9_call": plugin.tool_call, "mq9_task": plugin.tool_task,
        "mq9_register": plugin.tool_register, "mq9_unregister": plugin.tool_unregister,
        "mq9_status": plugin.tool_status,
    }
    for name, handler in handlers.items():
        ctx.register_tool(name=name, toolset=TOOLSET, schema=SCHEMAS[name], handler=_guarded(handler),
                          description=SCHEMAS[name]["description"])
    ctx.register_hook("on_session_start", _hook(plugin.start))
    ctx.register_hook("on_session_reset", _hook(plugin.start))
    ctx.register_hook("on_session_finalize", _hook(plugin.stop))
