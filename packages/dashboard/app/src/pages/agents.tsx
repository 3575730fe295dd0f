import type { AgentEntry } from "@mq9/broker/api";
import { useState } from "preact/hooks";
import { type ApiFailure, api } from "../api";
import { Failure, Loading } from "../components/notice";
import { age } from "../format";
import { useLiveGet } from "../live";

type Skill = { name?: string; id?: string };

/** A registry entry, with the fields of the registered body (an AgentCard) that this page reads. */
type RegisteredAgent = AgentEntry & {
  tags?: string[];
  skills?: Skill[];
  agent_card?: { skills?: Skill[]; description?: string };
};

function skillsOf(agent: RegisteredAgent): string {
  const skills = agent.skills ?? agent.agent_card?.skills ?? [];
  return skills
    .map((s) => s.name ?? s.id ?? "")
    .filter(Boolean)
    .join(", ");
}

/** The agent's last REPORT as a status line: its text, or its JSON in short. */
function statusOf(agent: RegisteredAgent): string {
  const status = agent._status;
  if (status === undefined || status === null || status === "") return "—";
  if (typeof status === "string") return status;
  const report = (status as Record<string, unknown>).report_info;
  const text = typeof report === "string" ? report : JSON.stringify(status);
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
}

function Discovery({ onPick }: { onPick: (mailbox: string) => void }) {
  const [mode, setMode] = useState("text");
  const [query, setQuery] = useState("");
  const [tags, setTags] = useState("");
  const [result, setResult] = useState<{ agents: RegisteredAgent[]; warning?: string }>();
  const [error, setError] = useState<ApiFailure>();
  const run = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    try {
      const tagList = tags
        .split(",")
        .map((t) => t.trim())
        .filter(Boolean);
      setResult(
        await api("POST", "/api/v1/agents/discover", {
          mode,
          ...(query ? { query } : {}),
          ...(tagList.length ? { tags: tagList } : {}),
        }),
      );
    } catch (err) {
      setResult(undefined);
      setError(err as ApiFailure);
    }
  };
  return (
    <form class="discover" onSubmit={run} data-testid="discover-form">
      <h3>Discover</h3>
      <div class="row">
        <select value={mode} onChange={(e) => setMode((e.target as HTMLSelectElement).value)} name="mode">
          <option value="text">text</option>
          <option value="semantic">semantic</option>
          <option value="hybrid">hybrid</option>
          <option value="tag">tag</option>
        </select>
        <input
          name="query"
          placeholder="what should the agent do?"
          value={query}
          onInput={(e) => setQuery((e.target as HTMLInputElement).value)}
        />
        <input
          name="tags"
          placeholder="tags, comma-separated"
          value={tags}
          onInput={(e) => setTags((e.target as HTMLInputElement).value)}
        />
        <button type="submit">search</button>
      </div>
      <Failure error={error} />
      {result?.warning && <div class="notice">{result.warning}</div>}
      {result && (
        <table data-testid="discover-results">
          <tbody>
            {result.agents.length === 0 && (
              <tr>
                <td class="muted">no agent matches</td>
              </tr>
            )}
            {result.agents.map((a) => (
              <tr key={a.mailbox} onClick={() => onPick(a.mailbox!)} data-agent={a.name}>
                <td>{a.name}</td>
                <td class="muted">{a.mailbox}</td>
                <td class="num" data-col="score">
                  {a._score === undefined ? "" : a._score.toPrecision(3)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </form>
  );
}

/** The registry: who is online, their last heartbeat, status, tags and skills; a tag filter; discovery; the raw card. */
export function Agents({ selected }: { selected?: string }) {
  const list = useLiveGet<{ agents: RegisteredAgent[] }>("/api/v1/agents?limit=1000");
  const [tag, setTag] = useState("");
  const shown = (list.data?.agents ?? []).filter((a) => !tag || (a.tags ?? []).includes(tag.trim()));
  const card = useLiveGet<RegisteredAgent>(
    selected ? `/api/v1/agents/${encodeURIComponent(selected)}` : undefined,
  );
  const pick = (mailbox: string) => {
    location.hash = `#/agents/${encodeURIComponent(mailbox)}`;
  };
  return (
    <section>
      <h2>Agents</h2>
      <input
        type="search"
        placeholder="filter by tag"
        value={tag}
        onInput={(e) => setTag((e.target as HTMLInputElement).value)}
        data-testid="agent-tag-filter"
      />
      <Failure error={list.error} />
      {!list.data && !list.error && <Loading />}
      {list.data && (
        <table data-testid="agent-table">
          <thead>
            <tr>
              <th>name</th>
              <th>mailbox</th>
              <th>state</th>
              <th>last heartbeat</th>
              <th>status (last REPORT)</th>
              <th>tags</th>
              <th>skills</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((a) => (
              <tr key={a.mailbox} onClick={() => pick(a.mailbox!)} data-agent={a.name}>
                <td>{a.name}</td>
                <td class="muted">{a.mailbox}</td>
                <td>
                  {/* The CLI's words (mq9 agent list): online while it heartbeats within its ttl. */}
                  <span class={`pill ${a.online ? "on" : "off"}`}>{a.online ? "online" : "offline"}</span>
                </td>
                <td>{a._last_seen ? `${age(a._last_seen * 1000)} ago` : "—"}</td>
                <td class="clip" data-col="status">
                  {statusOf(a)}
                </td>
                <td>{(a.tags ?? []).join(", ")}</td>
                <td>{skillsOf(a)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && shown.length === 0 && (
        <div class="muted">no agent {tag ? "with that tag" : "registered"}</div>
      )}
      {!list.error && <Discovery onPick={pick} />}
      {selected && (
        <div class="card">
          <h3>AgentCard of {selected}</h3>
          <Failure error={card.error} />
          {card.data && <pre data-testid="agent-card">{JSON.stringify(card.data, null, 2)}</pre>}
        </div>
      )}
    </section>
  );
}
