import type { GroupDetail, GroupReset, Released } from "@mq9/broker/api";
import { useState } from "preact/hooks";
import { type ApiFailure, api } from "../api";
import { Failure, Loading } from "../components/notice";
import { age } from "../format";
import { useLiveGet } from "../live";

/** "in 12 s" or "3 s ago" for a unix-ms time. */
function until(ms: number): string {
  return ms >= Date.now() ? `in ${age(Date.now(), ms)}` : `${age(ms)} ago`;
}

/** One consumer group: its figures, members, the messages it holds in flight; release and reset. */
export function Group({ address, name }: { address: string; name: string }) {
  const base = `/api/v1/mailboxes/${encodeURIComponent(address)}/groups/${encodeURIComponent(name)}`;
  const detail = useLiveGet<GroupDetail>(base);
  const [notice, setNotice] = useState<string>();
  const [fromId, setFromId] = useState("");
  const act = async (question: string, run: () => Promise<string>) => {
    if (!window.confirm(question)) return;
    try {
      setNotice(await run());
      detail.reload();
    } catch (err) {
      setNotice((err as ApiFailure).message);
    }
  };
  const release = (member?: string) =>
    act(
      member === undefined
        ? `End every running lease of group ${name}? Its members' messages go to the group again.`
        : `End the running leases of member ${member || "(unnamed)"}?`,
      async () => {
        const reply = await api<Released>("POST", `${base}/release`, member === undefined ? {} : { member });
        return `released ${reply.released} leases`;
      },
    );
  const reset = (position: GroupReset, label: string) =>
    act(`Restart group ${name} at ${label}? Its leases and ACKs are dropped.`, async () => {
      await api("POST", `${base}/reset`, position);
      return `restarted at ${label}`;
    });
  const g = detail.data?.group;
  return (
    <section>
      <h2>
        <a href="#/mailboxes">Mailboxes</a> /{" "}
        <a href={`#/mailboxes/${encodeURIComponent(address)}`}>{address}</a> / group {name}
      </h2>
      <Failure error={detail.error} />
      {!detail.data && !detail.error && <Loading />}
      {g && (
        <>
          <dl class="facts wide" data-testid="group-facts">
            <dt>position</dt>
            <dd>
              critical {g.position.critical} · urgent {g.position.urgent} · normal {g.position.normal}
            </dd>
            <dt>lag</dt>
            <dd>
              {g.lag} messages · {g.lag_seconds} s (pending {g.pending}, leased {g.leased})
            </dd>
            <dt>redelivered</dt>
            <dd>{g.redelivered}</dd>
            <dt>dead-lettered</dt>
            <dd>{g.dead_lettered}</dd>
            <dt>delivery limit</dt>
            <dd>{g.max_deliver === null ? "none" : g.max_deliver}</dd>
            <dt>backoff</dt>
            <dd>{g.backoff_ms.length === 0 ? "—" : g.backoff_ms.map((ms) => `${ms} ms`).join(", ")}</dd>
          </dl>
          <h3>Members</h3>
          {g.members.length === 0 ? (
            <div class="muted">no member holds a lease now</div>
          ) : (
            <table data-testid="member-table">
              <thead>
                <tr>
                  <th>member</th>
                  <th class="num">leased</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {g.members.map((m) => (
                  <tr key={m.member} data-member={m.member}>
                    <td>{m.member || <span class="muted">(unnamed)</span>}</td>
                    <td class="num">{m.leased}</td>
                    <td>
                      <button type="button" onClick={() => release(m.member)}>
                        release
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h3>In flight (at most 100)</h3>
          {(g.leases ?? []).length === 0 ? (
            <div class="muted">nothing in flight</div>
          ) : (
            <table data-testid="lease-table">
              <thead>
                <tr>
                  <th class="num">msg_id</th>
                  <th>member</th>
                  <th>state</th>
                  <th class="num">deliveries</th>
                  <th>lease ends</th>
                  <th>next try</th>
                  <th>last failure</th>
                </tr>
              </thead>
              <tbody>
                {g.leases?.map((l) => (
                  <tr key={l.msg_id} data-msg-id={l.msg_id} data-state={l.state}>
                    <td class="num">{l.msg_id}</td>
                    <td>{l.member ?? ""}</td>
                    <td>
                      <span class={`pill ${l.state}`}>{l.state}</span>
                    </td>
                    <td class="num" data-col="deliveries">
                      {l.delivery_count}
                    </td>
                    <td>{l.state === "leased" ? until(l.lease_until) : "—"}</td>
                    <td>{l.retry_at === null ? "—" : until(l.retry_at)}</td>
                    <td>{l.reason ?? ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <div class="actions">
            <button type="button" onClick={() => release()} data-testid="release-all">
              release every lease
            </button>
            <button type="button" onClick={() => reset({ deliver: "earliest" }, "the earliest message")}>
              reset to earliest
            </button>
            <button type="button" onClick={() => reset({ deliver: "latest" }, "after the newest message")}>
              reset to latest
            </button>
            <form
              class="row"
              onSubmit={(e) => {
                e.preventDefault();
                if (/^\d+$/.test(fromId)) void reset({ from_id: Number(fromId) }, `msg_id ${fromId}`);
              }}
            >
              <input
                name="from_id"
                placeholder="msg_id"
                value={fromId}
                onInput={(e) => setFromId((e.target as HTMLInputElement).value)}
              />
              <button type="submit">reset to msg_id</button>
            </form>
            {notice && (
              <span class="muted" data-testid="group-notice">
                {notice}
              </span>
            )}
          </div>
        </>
      )}
    </section>
  );
}
