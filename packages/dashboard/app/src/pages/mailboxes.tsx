import type { MailboxList } from "@mq9/broker/api";
import { useState } from "preact/hooks";
import { Failure, Loading } from "../components/notice";
import { age, bytes, ttl } from "../format";
import { useLiveGet } from "../live";

/**
 * Mailboxes of the broker's own machinery rather than of users: the orchestrator's and its agents'
 * (namespace `orch`, the default of both), dead-letter mailboxes of those, and system ones.
 */
export function isInternal(address: string): boolean {
  return /^(orch\.|\$|_)/.test(address);
}

const HIDE_KEY = "mq9.dashboard.hide-internal";

/** Every mailbox with its depth per priority, searchable by address; internal ones hidden unless asked. */
export function Mailboxes() {
  const [search, setSearch] = useState("");
  const [hide, setHide] = useState(localStorage.getItem(HIDE_KEY) !== "false");
  const list = useLiveGet<MailboxList>(
    `/api/v1/mailboxes?limit=1000${search ? `&search=${encodeURIComponent(search)}` : ""}`,
  );
  const all = list.data?.mailboxes ?? [];
  const shown = hide ? all.filter((m) => !isInternal(m.mail_address)) : all;
  const toggle = (e: Event) => {
    const checked = (e.target as HTMLInputElement).checked;
    localStorage.setItem(HIDE_KEY, String(checked));
    setHide(checked);
  };
  return (
    <section>
      <h2>Mailboxes</h2>
      <input
        type="search"
        placeholder="search addresses"
        value={search}
        onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
        data-testid="mailbox-search"
      />
      <label class="switch">
        <input type="checkbox" checked={hide} onChange={toggle} data-testid="hide-internal" /> hide internal
        mailboxes (orchestrator, system)
        {hide && all.length > shown.length && ` — ${all.length - shown.length} hidden`}
      </label>
      <Failure error={list.error} />
      {!list.data && !list.error && <Loading />}
      {list.data && (
        <table data-testid="mailbox-table">
          <thead>
            <tr>
              <th>address</th>
              <th class="num">critical</th>
              <th class="num">urgent</th>
              <th class="num">normal</th>
              <th class="num">bytes</th>
              <th>oldest</th>
              <th class="num">delayed</th>
              <th class="num">groups</th>
              <th>TTL</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((m) => (
              <tr key={m.mail_address} data-mailbox={m.mail_address}>
                <td>
                  <a href={`#/mailboxes/${encodeURIComponent(m.mail_address)}`}>{m.mail_address}</a>
                  {m.desc && <div class="muted">{m.desc}</div>}
                </td>
                <td class="num" data-col="critical">
                  {m.depth.critical}
                </td>
                <td class="num" data-col="urgent">
                  {m.depth.urgent}
                </td>
                <td class="num" data-col="normal">
                  {m.depth.normal}
                </td>
                <td class="num">{bytes(m.bytes)}</td>
                <td>{m.oldest_at === null ? "—" : age(m.oldest_at)}</td>
                <td class="num">{m.delayed}</td>
                <td class="num">{m.groups}</td>
                <td>{ttl(m.ttl)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && shown.length === 0 && <div class="muted">no mailboxes{search && " match"}</div>}
    </section>
  );
}
