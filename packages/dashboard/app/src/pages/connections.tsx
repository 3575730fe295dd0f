import type { ConnectionList } from "@mq9/broker/api";
import { useState } from "preact/hooks";
import { Failure, Loading } from "../components/notice";
import { age, bytes } from "../format";
import { useLiveGet } from "../live";

const SORTS = [
  ["since", "oldest first"],
  ["msgs_in", "messages in"],
  ["msgs_out", "messages out"],
  ["bytes_in", "bytes in"],
  ["bytes_out", "bytes out"],
  ["pending", "pending"],
  ["subscriptions", "subscriptions"],
] as const;

/** Each client connection of the broker's listener, as nats-server's /connz lists them. */
export function Connections() {
  const [sort, setSort] = useState("since");
  const list = useLiveGet<ConnectionList>(`/api/v1/connections?sort=${sort}`);
  return (
    <section>
      <h2>Connections</h2>
      <label>
        sort by{" "}
        <select value={sort} onChange={(e) => setSort((e.target as HTMLSelectElement).value)} name="sort">
          {SORTS.map(([value, label]) => (
            <option value={value} key={value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <Failure error={list.error} />
      {!list.data && !list.error && <Loading />}
      {list.data?.note && <div class="notice">{list.data.note}</div>}
      {list.data && (
        <table data-testid="connection-table">
          <thead>
            <tr>
              <th class="num">id</th>
              <th>name</th>
              <th>address</th>
              <th>user</th>
              <th>connected</th>
              <th class="num">subs</th>
              <th class="num">msgs in</th>
              <th class="num">bytes in</th>
              <th class="num">msgs out</th>
              <th class="num">bytes out</th>
              <th class="num">pending</th>
            </tr>
          </thead>
          <tbody>
            {list.data.connections.map((c) => (
              <tr key={c.id} data-connection={c.name ?? ""}>
                <td class="num">{c.id}</td>
                <td>{c.name ?? <span class="muted">—</span>}</td>
                <td>{c.address}</td>
                <td>{c.user ?? ""}</td>
                <td title={new Date(c.connected_at).toLocaleString()}>{age(c.connected_at)} ago</td>
                <td class="num" data-col="subscriptions">
                  {c.subscriptions}
                </td>
                <td class="num" data-col="msgs_in">
                  {c.msgs_in}
                </td>
                <td class="num">{bytes(c.bytes_in)}</td>
                <td class="num" data-col="msgs_out">
                  {c.msgs_out}
                </td>
                <td class="num">{bytes(c.bytes_out)}</td>
                <td class="num">{bytes(c.pending_bytes)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && <div class="muted">{list.data.total} connections</div>}
    </section>
  );
}
