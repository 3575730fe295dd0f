"""Answers an incoming task with a fresh Hermes agent run (the way Hermes' cron runs jobs).

A fresh AIAgent per task, with the conversation of the task's A2A context passed as
history, so a follow-up in the same context continues it. The live CLI session is not
used: Hermes' `ctx.inject_message` only queues a line into the interactive CLI and has
no way to hand the answer back, and it does not exist in gateway mode.
"""

from __future__ import annotations

import logging
import threading
from typing import Optional

logger = logging.getLogger(__name__)

# One thread at a time imports Hermes' agent loop: two threads importing the same
# modules at once can trip Python's import deadlock detection.
_import_lock = threading.Lock()


def warm_up() -> None:
    """Imports Hermes' agent loop ahead of the first task (it loads every built-in tool: seconds)."""
    try:
        with _import_lock:
            import run_agent  # noqa: F401
    except Exception as err:
        logger.debug("mq9: could not preload run_agent: %s", err)


def answer_with_hermes(text: str, history: list, context_id: str, *,
                       toolsets: Optional[list[str]] = None) -> tuple[str, list]:
    """Runs Hermes on `text` with the model of its config; returns (final reply, new history)."""
    with _import_lock:
        from hermes_cli.config import load_config
        from hermes_cli.runtime_provider import resolve_runtime_provider
        from run_agent import AIAgent

    config = load_config() or {}
    model_cfg = config.get("model") or {}
    model = model_cfg.get("default") if isinstance(model_cfg, dict) else str(model_cfg)
    runtime = resolve_runtime_provider(target_model=model)
    agent = AIAgent(
        model=model or "",
        api_key=runtime.get("api_key"),
        base_url=runtime.get("base_url"),
        provider=runtime.get("provider"),
        api_mode=runtime.get("api_mode"),
        enabled_toolsets=toolsets,
        # An incoming task must not delegate straight back over mq9 (ping-pong between agents).
        disabled_toolsets=["mq9"],
        quiet_mode=True,
        skip_memory=True,
        skip_context_files=True,
        platform="mq9",
        session_id=f"mq9-{context_id}",
    )
    result = agent.run_conversation(text, conversation_history=list(history or []))
    reply = result.get("final_response") or ""
    return reply, result.get("messages") or []
