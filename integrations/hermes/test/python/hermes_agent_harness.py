"""Drives a real Hermes Agent (from the test virtualenv) with our plugin, for the vitest suite.

    python hermes_agent_harness.py <command> --home DIR --server mq9://… --agent-id ID [...]

Each command sets up HERMES_HOME (config.yaml with a stub model, the plugin installed in
plugins/mq9 and enabled), lets Hermes' own plugin loader load it, and prints one JSON
line per step on stdout:

  load    what the loader found, the tools in Hermes' registry, and each tool dispatched
  serve   a session: on_session_start, then serve until stdin closes, then on_session_finalize
  ask     a Hermes agent turn per --say line, the stub model calling the tool it names
  mcp     Hermes' MCP client with --mcp-config appended to config.yaml: the tools it registers,
          then a stub-model turn calling the tool named by --call (its JSON args from --query)
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLUGIN = HERE.parents[1] / "mq9"


def emit(step: str, **data) -> None:
    print(json.dumps({"step": step, **data}, default=str), flush=True)


def setup_home(args) -> str:
    from stub_model import start_stub_model

    url, _server = start_stub_model()
    home = Path(args.home)
    (home / "plugins").mkdir(parents=True, exist_ok=True)
    target = home / "plugins" / "mq9"
    if not target.exists():
        shutil.copytree(PLUGIN, target, ignore=shutil.ignore_patterns("__pycache__"))
    settings = {"ttl": args.ttl, "call_timeout": args.call_timeout}
    if not args.env_config:
        settings["agent_id"] = args.agent_id
    if args.server:
        settings["server"] = args.server
    if args.card:
        settings["agent_card"] = json.loads(args.card)
    config = {
        "model": {"provider": "custom", "base_url": url, "default": "stub-model", "api_key": "stub"},
        "plugins": {"enabled": ["mq9"], "entries": {"mq9": {"settings": settings}}},
        "platform_toolsets": {"cli": args.toolsets.split(",")} if args.toolsets else {},
    }
    import yaml

    (home / "config.yaml").write_text(yaml.safe_dump(config))
    os.environ["HERMES_HOME"] = str(home)
    if not args.env_config:  # the settings block alone configures the plugin
        for key in ("MQ9_SERVER", "MQ9_TOKEN", "MQ9_AGENT_ID"):
            os.environ.pop(key, None)
    return url


def collect_session_leftovers() -> None:
    """Hermes' gateway lives on after a session ends: collect now what the session left, so that
    a task it left pending shows ("Task was destroyed but it is pending!") before the test ends."""
    gc.collect()


def load_plugins():
    from hermes_cli.plugins import discover_plugins, get_plugin_manager

    discover_plugins()
    return get_plugin_manager()


def cmd_load(args) -> None:
    setup_home(args)
    manager = load_plugins()
    from tools.registry import registry

    plugins = {p["name"]: p for p in manager.list_plugins()}
    mq9_tools = sorted(n for n in registry.get_all_tool_names() if n.startswith("mq9_"))
    emit("loaded", plugin=plugins.get("mq9"), tools=mq9_tools,
         toolsets={n: registry.get_toolset_for_tool(n) for n in mq9_tools})
    if not mq9_tools:
        return
    from hermes_cli.plugins import invoke_hook

    invoke_hook("on_session_start", session_id="s1", model="stub-model", platform="cli")
    for name, tool_args in (("mq9_status", {}), ("mq9_discover", {"query": args.query or "hermes"}),
                            ("mq9_discover", {"tag": "browser", "limit": 5}),
                            ("mq9_register", {"agent_card": {"description": "re-registered by the test"}}),
                            ("mq9_discover", {"mode": "text", "query": "re-registered"}),
                            ("mq9_call", {"target": args.agent_id + ".nobody", "message": "hello", "timeout": 1}),
                            ("mq9_task", {"task_id": "unknown"}),
                            ("mq9_unregister", {}),
                            ("mq9_discover", {"mode": "text", "query": "re-registered"})):
        emit("dispatch", tool=name, args=tool_args, result=json.loads(registry.dispatch(name, tool_args)))
    invoke_hook("on_session_finalize", session_id="s1")
    collect_session_leftovers()
    emit("finalized")


def cmd_serve(args) -> None:
    setup_home(args)
    load_plugins()
    from hermes_cli.plugins import invoke_hook

    invoke_hook("on_session_start", session_id="serve", model="stub-model", platform="cli")
    emit("serving", agent_id=args.agent_id)
    sys.stdin.read()  # until the test closes stdin
    invoke_hook("on_session_finalize", session_id="serve")
    collect_session_leftovers()
    emit("stopped")


def cmd_ask(args) -> None:
    url = setup_home(args)
    load_plugins()
    from hermes_cli.plugins import invoke_hook
    from run_agent import AIAgent

    invoke_hook("on_session_start", session_id="ask", model="stub-model", platform="cli")
    agent = AIAgent(model="stub-model", base_url=url, api_key="stub", provider="custom", quiet_mode=True,
                    skip_memory=True, skip_context_files=True, enabled_toolsets=["mq9"], platform="cli")
    for line in iter(sys.stdin.readline, ""):
        line = line.strip()
        if not line:
            continue
        name, tool_args = line.split(" ", 1)
        started = time.time()
        result = agent.run_conversation(f"CALL_TOOL {name} {tool_args}")
        calls = [m for m in result.get("messages", []) if m.get("role") == "tool"]
        emit("turn", tool=name, final=result.get("final_response"),
             tool_result=json.loads(calls[-1]["content"]) if calls else None, seconds=time.time() - started)
    invoke_hook("on_session_finalize", session_id="ask")
    emit("stopped")


def cmd_mcp(args) -> None:
    url = setup_home(args)
    with open(Path(args.home) / "config.yaml", "a") as config:
        config.write("\n" + Path(args.mcp_config).read_text())
    from run_agent import AIAgent
    from tools.mcp_tool import discover_mcp_tools, shutdown_mcp_servers

    try:
        from tools.registry import registry

        names = discover_mcp_tools()
        toolsets = sorted({registry.get_toolset_for_tool(n) for n in names})
        emit("discovered", tools=sorted(names), toolsets=toolsets)
        agent = AIAgent(model="stub-model", base_url=url, api_key="stub", provider="custom", quiet_mode=True,
                        skip_memory=True, skip_context_files=True, enabled_toolsets=toolsets, platform="cli")
        result = agent.run_conversation(f"CALL_TOOL {args.call} {args.query or '{}'}")
        calls = [m for m in result.get("messages", []) if m.get("role") == "tool"]
        emit("turn", tool=args.call, tool_result=calls[-1]["content"] if calls else None)
    finally:
        shutdown_mcp_servers()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["load", "serve", "ask", "mcp"])
    parser.add_argument("--home", required=True)
    parser.add_argument("--server", default="")
    parser.add_argument("--agent-id", default="hermes.test")
    parser.add_argument("--ttl", type=int, default=30)
    parser.add_argument("--call-timeout", type=float, default=30)
    parser.add_argument("--toolsets", default="")
    parser.add_argument("--card", default="")
    parser.add_argument("--query", default="")
    parser.add_argument("--mcp-config", default="", help="YAML with an mcp_servers block (mcp)")
    parser.add_argument("--call", default="", help="the tool the stub model calls (mcp)")
    parser.add_argument("--env-config", action="store_true", help="configure by MQ9_* env, not settings")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    {"load": cmd_load, "serve": cmd_serve, "ask": cmd_ask, "mcp": cmd_mcp}[args.command](args)


if __name__ == "__main__":
    main()
