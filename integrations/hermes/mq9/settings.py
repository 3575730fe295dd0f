"""The plugin's settings: `plugins.entries.mq9.settings` in Hermes' config.yaml, then env."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Optional
from urllib.parse import urlsplit


@dataclass
class Settings:
    """What the plugin was told; `server` is None when no broker is configured."""

    server: Optional[str] = None
    """The broker as a NATS URL (nats:// or tls://), converted from mq9:// / mq9s://."""
    token: Optional[str] = None
    agent_id: str = "hermes"
    """This agent's inbox mailbox and registry name."""
    ttl: int = 90
    """Seconds the registration lives without a heartbeat; heartbeats come every third of it."""
    register: bool = True
    """Register and serve the inbox at session start (false: tools only)."""
    serve: bool = True
    capabilities: list[str] = field(default_factory=list)
    """Extra tags on the AgentCard."""
    agent_card: dict[str, Any] = field(default_factory=dict)
    """Overrides merged over the derived AgentCard."""
    call_timeout: float = 60.0
    """Default seconds mq9_call waits before handing back a task id."""
    task_timeout: float = 900.0
    """Seconds one incoming task may run."""
    concurrency: int = 1
    toolsets: Optional[list[str]] = None
    """Toolsets the answering agent gets (default: the configured CLI toolsets)."""


_ID = re.compile(r"[^a-z0-9._-]+")


def broker_url(raw: str) -> str:
    """mq9://host[:port] → nats://host:port (default port 4332); mq9s:// → tls://."""
    parts = urlsplit(raw.strip())
    scheme = parts.scheme.lower()
    if scheme in ("nats", "tls"):
        return raw.strip()
    if scheme not in ("mq9", "mq9s"):
        raise ValueError(f"MQ9_SERVER must be mq9://host[:port], mq9s://, nats:// or tls://, got {raw!r}")
    host = parts.hostname or "localhost"
    port = parts.port or 4332
    auth = ""
    if parts.username:
        auth = parts.username + (f":{parts.password}" if parts.password else "") + "@"
    return f"{'tls' if scheme == 'mq9s' else 'nats'}://{auth}{host}:{port}"


def _truthy(value: Any, default: bool) -> bool:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def _hermes_config() -> dict:
    try:
        from hermes_cli.config import load_config

        return load_config() or {}
    except Exception:
        return {}


def load_settings(config: Optional[dict] = None, env: Optional[dict] = None) -> Settings:
    """Settings from config (`plugins.entries.mq9.settings`), env winning for the broker fields."""
    config = _hermes_config() if config is None else config
    env = os.environ if env is None else env
    entry = ((config.get("plugins") or {}).get("entries") or {}).get("mq9") or {}
    block = entry.get("settings") or {}
    server = env.get("MQ9_SERVER") or block.get("server")
    agent_id = env.get("MQ9_AGENT_ID") or block.get("agent_id") or f"hermes.{_profile()}"
    settings = Settings(
        server=broker_url(server) if server else None,
        token=env.get("MQ9_TOKEN") or block.get("token") or None,
        agent_id=_ID.sub(".", str(agent_id).lower()).strip("."),
        ttl=int(env.get("MQ9_AGENT_TTL") or block.get("ttl") or 90),
        register=_truthy(env.get("MQ9_REGISTER", block.get("register")), True),
        serve=_truthy(env.get("MQ9_SERVE", block.get("serve")), True),
        capabilities=_list(env.get("MQ9_CAPABILITIES") or block.get("capabilities")),
        agent_card=dict(block.get("agent_card") or {}),
        call_timeout=float(block.get("call_timeout") or 60),
        task_timeout=float(block.get("task_timeout") or 900),
        concurrency=max(1, int(block.get("concurrency") or 1)),
        toolsets=_list(block["toolsets"]) if block.get("toolsets") is not None else None,
    )
    return settings


def _profile() -> str:
    try:
        from hermes_cli.profiles import get_active_profile_name

        return get_active_profile_name() or "default"
    except Exception:
        return "default"
