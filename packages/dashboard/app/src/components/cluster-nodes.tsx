import type { ClusterNode, ClusterRoster } from "@mq9/broker/api";
import { age, duration } from "../format";
import { useLiveGet } from "../live";
import { WebLink } from "./web-link";

/** A cluster node's roster (GET /api/v1/cluster): nothing on a broker of its own. */
export function ClusterNodes() {
  const roster = useLiveGet<ClusterRoster>("/api/v1/cluster");
  if (!roster.data?.clustered) return null;
  const { nodes } = roster.data;
  const count = (state: ClusterNode["state"]) => nodes.filter((n) => n.state === state).length;
  const up = count("up");
  const others = (["missing", "down"] as const).filter((state) => count(state) > 0);
  return (
    <>
      <h3>
        Cluster nodes{" "}
        <span class="muted">
          {[`${up} up`, ...others.map((state) => `${count(state)} ${state}`)].join(", ")}
        </span>
      </h3>
      <table data-testid="cluster-nodes">
        <thead>
          <tr>
            <th>node</th>
            <th>state</th>
            <th>nats-server</th>
            <th>dashboard</th>
            <th>runs</th>
            <th>started</th>
            <th>last heard</th>
          </tr>
        </thead>
        <tbody>
          {nodes.map((n) => (
            <tr key={n.instance} data-node={n.node} data-state={n.state}>
              <td>
                {n.node}
                {n.self && <span class="muted"> (this one)</span>}
              </td>
              <td>
                <span class={`pill ${n.state === "up" ? "on" : "status-failed"}`}>{n.state}</span>
              </td>
              <td>{n.nats_server ?? "—"}</td>
              <td>{n.http_url === null ? "—" : <WebLink href={n.http_url} />}</td>
              <td data-col="duties">{n.duties.join(", ") || "—"}</td>
              <td>{age(n.started_at)} ago</td>
              <td>{n.self ? "—" : `${duration(n.last_heard_ms)} ago`}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
