import type { MailboxDetail, MailboxHistory, MessagePage, Purged, Sent } from "@mq9/broker/api";
import { useState } from "preact/hooks";
import { type ApiFailure, api } from "../api";
import { Chart } from "../components/chart";
import { Failure, Loading } from "../components/notice";
import { PayloadView, payloadHint } from "../components/payload";
import { RangePicker } from "../components/range-picker";
import { age, bytes, ttl } from "../format";
import { useLiveGet } from "../live";

function SendForm({ address, onSent }: { address: string; onSent: () => void }) {
  const [payload, setPayload] = useState("");
  const [priority, setPriority] = useState("normal");
  const [key, setKey] = useState("");
  const [tags, setTags] = useState("");
  const [result, setResult] = useState<string>();
  const send = async (event: Event) => {
    event.preventDefault();
    try {
      const tagList = tags
        .split(",")
        .map((t) => t.trim())
        .filter(Boolean);
      const reply = await api<Sent>("POST", `/api/v1/mailboxes/${encodeURIComponent(address)}/messages`, {
        payload,
        priority,
        ...(key ? { key } : {}),
        ...(tagList.length ? { tags: tagList } : {}),
      });
      setResult(`sent: msg_id ${reply.msg_id}`);
      onSent();
    } catch (err) {
      setResult((err as ApiFailure).message);
    }
  };
  return (
    <form class="send" onSubmit={send} data-testid="send-form">
      <h3>Send a test message</h3>
      <textarea
        placeholder="payload (text or JSON)"
        value={payload}
        onInput={(e) => setPayload((e.target as HTMLTextAreaElement).value)}
      />
      <div class="row">
        <select value={priority} onChange={(e) => setPriority((e.target as HTMLSelectElement).value)}>
          <option>normal</option>
          <option>urgent</option>
          <option>critical</option>
        </select>
        <input placeholder="key" value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
        <input
          placeholder="tags, comma-separated"
          value={tags}
          onInput={(e) => setTags((e.target as HTMLInputElement).value)}
        />
        <button type="submit">send</button>
      </div>
      {result && <div class="muted">{result}</div>}
    </form>
  );
}

const COLORS = ["#3b82f6", "#10b981", "#f59e0b", "#8b5cf6", "#ef4444", "#06b6d4"];

/** A mailbox's kept history: its messages, its SEND and FETCH rates, its groups' lag. */
function MailboxCharts({ base }: { base: string }) {
  const [range, setRange] = useState(900);
  const history = useLiveGet<MailboxHistory>(`${base}/history?range=${range}`);
  const h = history.data;
  return (
    <>
      <RangePicker range={range} onChange={setRange} />
      {h && !h.tracked && (
        <div class="muted">the broker keeps the history of its first mailboxes only; not of this one</div>
      )}
      {h?.tracked && (
        <div class="charts">
          <Chart
            id="mailbox-messages"
            title="messages"
            times={h.at}
            series={[{ label: "messages", color: "#8b5cf6", values: h.series.messages }]}
          />
          <Chart
            id="mailbox-rates"
            title="per second"
            times={h.at}
            series={[
              { label: "SEND", color: "#3b82f6", values: h.series.sends_per_s },
              { label: "FETCH", color: "#10b981", values: h.series.fetches_per_s },
            ]}
          />
          {h.groups.length > 0 && (
            <Chart
              id="group-lag"
              title="groups' lag"
              times={h.at}
              series={h.groups.map((g, i) => ({
                label: g.name,
                color: COLORS[i % COLORS.length],
                values: g.series.lag,
              }))}
            />
          )}
        </div>
      )}
    </>
  );
}

const PRIORITIES = ["critical", "urgent", "normal"] as const;

/** The messages of a mailbox, newest first in pages, filtered by key, tag and priority; consumes nothing. */
function MessageBrowser({ base, address }: { base: string; address: string }) {
  const [filters, setFilters] = useState({ key: "", tag: "", priority: "" });
  // The before_id of each page shown so far: the last one is the page on screen.
  const [pages, setPages] = useState<(number | undefined)[]>([undefined]);
  const [fromId, setFromId] = useState("");
  const [selected, setSelected] = useState<number>();
  const [notice, setNotice] = useState<string>();
  const params = new URLSearchParams({ limit: "50" });
  const before = pages[pages.length - 1];
  if (before !== undefined) params.set("before_id", String(before));
  for (const [name, value] of Object.entries(filters)) if (value) params.set(name, value);
  const page = useLiveGet<MessagePage>(`${base}/browse?${params}`);
  const chosen = page.data?.messages.find((m) => m.msg_id === selected);
  const filter = (name: keyof typeof filters) => (e: Event) => {
    setFilters({ ...filters, [name]: (e.target as HTMLInputElement).value });
    setPages([undefined]);
  };
  const remove = async (msgId: number) => {
    if (!window.confirm(`Delete message ${msgId} of ${address}?`)) return;
    try {
      await api("DELETE", `${base}/messages/${msgId}`);
      setNotice(`deleted message ${msgId}`);
      setSelected(undefined);
      page.reload();
    } catch (err) {
      setNotice((err as ApiFailure).message);
    }
  };
  return (
    <>
      <h3>Messages (newest first; browsing consumes nothing)</h3>
      <div class="row filters" data-testid="message-filters">
        <input name="key" placeholder="key" value={filters.key} onInput={filter("key")} />
        <input name="tag" placeholder="tag" value={filters.tag} onInput={filter("tag")} />
        <select name="priority" value={filters.priority} onChange={filter("priority")}>
          <option value="">any priority</option>
          {PRIORITIES.map((p) => (
            <option key={p}>{p}</option>
          ))}
        </select>
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (/^\d+$/.test(fromId)) setPages([Number(fromId) + 1]);
          }}
        >
          <input
            name="from_id"
            placeholder="from msg_id"
            value={fromId}
            onInput={(e) => setFromId((e.target as HTMLInputElement).value)}
          />
          <button type="submit">go</button>
        </form>
      </div>
      <Failure error={page.error} />
      <div class="split">
        <div>
          <table data-testid="message-table">
            <thead>
              <tr>
                <th class="num">msg_id</th>
                <th>priority</th>
                <th>payload</th>
                <th>key</th>
                <th>tags</th>
              </tr>
            </thead>
            <tbody>
              {page.data?.messages.map((m) => (
                <tr
                  key={m.msg_id}
                  class={m.msg_id === selected ? "selected" : ""}
                  onClick={() => setSelected(m.msg_id)}
                  data-msg-id={m.msg_id}
                >
                  <td class="num">{m.msg_id}</td>
                  <td>{m.priority}</td>
                  <td class="clip">{payloadHint(m)}</td>
                  <td>{m.key ?? ""}</td>
                  <td>{m.tags?.join(", ") ?? ""}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div class="actions" data-testid="pager">
            <button
              type="button"
              disabled={pages.length === 1}
              onClick={() => setPages(pages.slice(0, -1))}
              data-testid="newer"
            >
              ← newer
            </button>
            <span class="muted">page {pages.length}</span>
            <button
              type="button"
              disabled={!page.data || page.data.next_before_id === null}
              onClick={() =>
                page.data?.next_before_id != null && setPages([...pages, page.data.next_before_id])
              }
              data-testid="older"
            >
              older →
            </button>
            {notice && <span class="muted">{notice}</span>}
          </div>
        </div>
        <div>
          {chosen ? (
            <>
              <PayloadView message={chosen} key={chosen.msg_id} />
              <button
                type="button"
                class="danger"
                onClick={() => remove(chosen.msg_id)}
                data-testid="delete-message"
              >
                delete message
              </button>
            </>
          ) : (
            <div class="muted">pick a message</div>
          )}
        </div>
      </div>
    </>
  );
}

/** One mailbox: its figures and history, groups, messages (browsed, never consumed), send, purge, delete. */
export function Mailbox({ address }: { address: string }) {
  const base = `/api/v1/mailboxes/${encodeURIComponent(address)}`;
  const detail = useLiveGet<MailboxDetail>(base);
  const [notice, setNotice] = useState<string>();
  const [sent, setSent] = useState(0);
  const act = async (what: "purge" | "delete") => {
    const question =
      what === "purge"
        ? `Delete every message of ${address}? The mailbox and its groups stay.`
        : `Delete the mailbox ${address} with its messages and groups?`;
    if (!window.confirm(question)) return;
    try {
      if (what === "purge") {
        const reply = await api<Purged>("POST", `${base}/purge`);
        setNotice(`purged ${reply.purged} messages`);
        setSent((n) => n + 1);
      } else {
        await api("DELETE", base);
        location.hash = "#/mailboxes";
      }
    } catch (err) {
      setNotice((err as ApiFailure).message);
    }
  };
  const m = detail.data?.mailbox;
  return (
    <section>
      <h2>
        <a href="#/mailboxes">Mailboxes</a> / {address}
      </h2>
      <Failure error={detail.error} />
      {!detail.data && !detail.error && <Loading />}
      {detail.data && m && (
        <>
          {m.desc && (
            <p class="desc" data-testid="mailbox-desc">
              {m.desc}
            </p>
          )}
          <dl class="facts wide">
            <dt>depth</dt>
            <dd data-testid="mailbox-depth">
              critical {m.depth.critical} · urgent {m.depth.urgent} · normal {m.depth.normal}
            </dd>
            <dt>stored</dt>
            <dd>
              {bytes(m.bytes)} (critical {bytes(m.bytes_by_priority.critical)} · urgent{" "}
              {bytes(m.bytes_by_priority.urgent)} · normal {bytes(m.bytes_by_priority.normal)})
            </dd>
            <dt>oldest</dt>
            <dd>{m.oldest_at === null ? "—" : age(m.oldest_at)}</dd>
            <dt>TTL</dt>
            <dd>{ttl(m.ttl)}</dd>
            <dt>delayed</dt>
            <dd>{m.delayed}</dd>
            <dt>dead letters</dt>
            <dd>
              <a href={`#/mailboxes/${encodeURIComponent(m.dead_letter)}`}>{m.dead_letter}</a>
              {m.max_deliver !== null && ` (after ${m.max_deliver} deliveries)`}
            </dd>
          </dl>
          <MailboxCharts base={base} />
          <h3>Groups</h3>
          {detail.data.groups.length === 0 ? (
            <div class="muted">no consumer group has fetched yet</div>
          ) : (
            <table data-testid="group-table">
              <thead>
                <tr>
                  <th>group</th>
                  <th>position (c / u / n)</th>
                  <th class="num">pending</th>
                  <th class="num">leased</th>
                  <th class="num">lag</th>
                  <th class="num">lag (s)</th>
                  <th class="num">redelivered</th>
                  <th class="num">dead-lettered</th>
                </tr>
              </thead>
              <tbody>
                {detail.data.groups.map((g) => (
                  <tr key={g.name} data-group={g.name}>
                    <td>
                      <a
                        href={`#/mailboxes/${encodeURIComponent(address)}/groups/${encodeURIComponent(g.name)}`}
                      >
                        {g.name}
                      </a>
                    </td>
                    <td>
                      {g.position.critical} / {g.position.urgent} / {g.position.normal}
                    </td>
                    <td class="num">{g.pending}</td>
                    <td class="num">{g.leased}</td>
                    <td class="num">{g.lag}</td>
                    <td class="num">{g.lag_seconds}</td>
                    <td class="num">{g.redelivered}</td>
                    <td class="num">{g.dead_lettered}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <div class="actions">
            <button type="button" onClick={() => act("purge")} data-testid="purge">
              purge messages
            </button>
            <button type="button" class="danger" onClick={() => act("delete")} data-testid="delete-mailbox">
              delete mailbox
            </button>
            {notice && <span class="muted">{notice}</span>}
          </div>
        </>
      )}
      <MessageBrowser base={base} address={address} key={sent} />
      {detail.data && <SendForm address={address} onSent={() => setSent((n) => n + 1)} />}
    </section>
  );
}
