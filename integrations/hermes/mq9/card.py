"""The AgentCard this Hermes registers: derived from its toolsets and skills, then overridden."""

from __future__ import annotations

import copy
from typing import Any, Optional

MAILBOX_BINDING = "urn:mq9:a2a:mailbox:v1"

# Toolsets every Hermes has; they say little about what this one is for.
_PLUMBING = {"memory", "todo", "clarify", "session_search", "mq9", "skills"}


def enabled_toolsets(config: dict, platform: str = "cli") -> list[str]:
    """The toolsets Hermes enables for `platform` (sorted); [] when Hermes cannot say."""
    try:
        from hermes_cli.tools_config import _get_platform_tools

        return sorted(_get_platform_tools(config, platform))
    except Exception:
        return []


def installed_skills() -> list[dict]:
    """Hermes' enabled skills as {name, description, category}; [] when Hermes cannot say."""
    try:
        from tools.skills_tool import _find_all_skills

        return _find_all_skills()
    except Exception:
        return []


def _merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def derive_card(agent_id: str, mailbox_url: str, toolsets: list[str], skills: list[dict],
                capabilities: list[str], override: Optional[dict] = None) -> dict[str, Any]:
    """An A2A v1.0 card: one skill per enabled toolset and Hermes skill, the mailbox interface first."""
    card_skills: list[dict] = []
    for skill in skills:
        tags = [t for t in (skill.get("category"), "skill") if t]
        card_skills.append({
            "id": f"skill.{skill['name']}",
            "name": skill["name"],
            "description": skill.get("description") or skill["name"],
            "tags": tags + list(capabilities),
        })
    for toolset in toolsets:
        if toolset in _PLUMBING:
            continue
        card_skills.append({
            "id": f"toolset.{toolset}",
            "name": toolset,
            "description": f"Hermes tools of the '{toolset}' toolset",
            "tags": [toolset] + list(capabilities),
        })
    if not card_skills:
        card_skills.append({"id": "general", "name": "General assistant",
                            "description": "Answers questions and carries out tasks in plain language",
                            "tags": ["general"] + list(capabilities)})
    card: dict[str, Any] = {
        "name": agent_id,
        "description": "A Hermes agent reachable through its mq9 mailbox.",
        "version": "1.0.0",
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": card_skills,
    }
    card = _merge(card, override or {})
    interfaces = [i for i in card.get("supportedInterfaces") or [] if i.get("protocolBinding") != MAILBOX_BINDING]
    card["supportedInterfaces"] = [
        {"url": mailbox_url, "protocolBinding": MAILBOX_BINDING, "protocolVersion": "1.0"}, *interfaces
    ]
    return card
