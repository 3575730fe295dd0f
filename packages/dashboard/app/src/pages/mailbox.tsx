import type { MailboxDetail, MailboxHistory, Messages, Purged, Sent } from "@mq9/broker/api";
import { useState } from "preact/hooks";
import { type ApiFailure, api } from "../api";
import { Chart } from "../components/chart";
import { Failure, Loading } from "../components/notice";
import { PayloadView, payloadText } from "../components/payload";
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

/** One mailbox: depth, groups, its messages peeked (never consumed), send, purge, delete. */
export function Mailbox({ address }: { address: string }) {
  const base = `/api/v1/mailboxes/${encodeURIComponent(address)}`;
  const detail = useLiveGet<MailboxDetail>(base);
  const peek = useLiveGet<Messages>(`${base}/peek?limit=100`);
  const [selected, setSelected] = useState<number>();
  const [notice, setNotice] = useState<string>();
  const chosen = peek.data?.messages.find((m) => m.msg_id === selected);
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
        peek.reload();
      } else {
        await api("DELETE", base);
        location.hash = "#/mailboxes";
      }
    } catch (err) {
      setNotice((err as ApiFailure).message);
    }
  };
  return (
    <section>
      <h2>
        <a href="#/mailboxes">Mailboxes</a> / {address}
      </h2>
      <Failure error={detail.error} />
      {!detail.data && !detail.error && <Loading />}
      {detail.data && (
        <>
          <dl class="facts wide">
            <dt>depth</dt>
            <dd data-testid="mailbox-depth">
              critical {detail.data.mailbox.depth.critical} · urgent {detail.data.mailbox.depth.urgent} ·
              normal {detail.data.mailbox.depth.normal}
            </dd>
            <dt>stored</dt>
            <dd>{bytes(detail.data.mailbox.bytes)}</dd>
            <dt>oldest</dt>
            <dd>{detail.data.mailbox.oldest_at === null ? "—" : age(detail.data.mailbox.oldest_at)}</dd>
            <dt>TTL</dt>
            <dd>{ttl(detail.data.mailbox.ttl)}</dd>
            <dt>delayed</dt>
            <dd>{detail.data.mailbox.delayed}</dd>
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
                  <th class="num">lag</th>
                  <th class="num">leased</th>
                </tr>
              </thead>
              <tbody>
                {detail.data.groups.map((g) => (
                  <tr key={g.name}>
                    <td>{g.name}</td>
                    <td class="num">{g.lag}</td>
                    <td class="num">{g.leased}</td>
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
      <h3>Messages (peeked in delivery order, never consumed)</h3>
      <Failure error={peek.error} />
      <div class="split">
        <table data-testid="message-table">
          <thead>
            <tr>
              <th class="num">msg_id</th>
              <th>priority</th>
              <th>payload</th>
              <th>key</th>
            </tr>
          </thead>
          <tbody>
            {peek.data?.messages.map((m) => (
              <tr
                key={m.msg_id}
                class={m.msg_id === selected ? "selected" : ""}
                onClick={() => setSelected(m.msg_id)}
                data-msg-id={m.msg_id}
              >
                <td class="num">{m.msg_id}</td>
                <td>{m.priority}</td>
                <td class="clip">{payloadText(m).slice(0, 80)}</td>
                <td>{m.key ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
        <div>
          {chosen ? (
            <PayloadView message={chosen} key={chosen.msg_id} />
          ) : (
            <div class="muted">pick a message</div>
          )}
        </div>
      </div>
      {detail.data && <SendForm address={address} onSent={() => peek.reload()} />}
    </section>
  );
}
