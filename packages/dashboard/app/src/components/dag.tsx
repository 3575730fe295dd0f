import dagre from "@dagrejs/dagre";

export interface DagStep {
  id: string;
  /** Shown under the id (the agent or capability that performs it). */
  detail?: string;
  dependsOn: string[];
  status?: string;
}

const NODE_WIDTH = 150;
const NODE_HEIGHT = 46;

/** A template's steps as a graph laid out by dagre (left to right along depends_on), colored by state. */
export function Dag({
  steps,
  testId,
  onPick,
}: {
  steps: DagStep[];
  testId?: string;
  /** Called with a step's id when it is clicked. */
  onPick?: (step: string) => void;
}) {
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: "LR", nodesep: 24, ranksep: 56, marginx: 8, marginy: 8 });
  graph.setDefaultEdgeLabel(() => ({}));
  const known = new Set(steps.map((s) => s.id));
  for (const step of steps) graph.setNode(step.id, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const step of steps) {
    for (const from of step.dependsOn) if (known.has(from)) graph.setEdge(from, step.id);
  }
  dagre.layout(graph);
  const size = graph.graph();
  const width = Math.max(size.width ?? 0, NODE_WIDTH + 16);
  const height = Math.max(size.height ?? 0, NODE_HEIGHT + 16);
  return (
    <svg class="dag" data-testid={testId} width={width} height={height} viewBox={`0 0 ${width} ${height}`}>
      <title>steps and their dependencies</title>
      <defs>
        <marker
          id="arrow"
          viewBox="0 0 10 10"
          refX="9"
          refY="5"
          markerWidth="7"
          markerHeight="7"
          orient="auto"
        >
          <path d="M0,0 L10,5 L0,10 z" fill="#7a8599" />
        </marker>
      </defs>
      {graph.edges().map((edge) => {
        const points = graph.edge(edge).points ?? [];
        return (
          <polyline
            key={`${edge.v}-${edge.w}`}
            class="dag-edge"
            data-from={edge.v}
            data-to={edge.w}
            points={points.map((p) => `${p.x},${p.y}`).join(" ")}
            marker-end="url(#arrow)"
          />
        );
      })}
      {steps.map((step) => {
        const node = graph.node(step.id);
        const status = step.status ?? "idle";
        return (
          // biome-ignore lint/a11y/noStaticElementInteractions: SVG has no button element; the node has role button and takes Enter.
          <g
            key={step.id}
            class={`dag-node status-${status}`}
            data-step={step.id}
            data-status={status}
            data-x={Math.round(node.x)}
            role={onPick && "button"}
            tabIndex={onPick && 0}
            onClick={onPick && (() => onPick(step.id))}
            onKeyDown={onPick && ((e: KeyboardEvent) => e.key === "Enter" && onPick(step.id))}
            transform={`translate(${node.x - NODE_WIDTH / 2},${node.y - NODE_HEIGHT / 2})`}
          >
            <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx="8" />
            <text x={NODE_WIDTH / 2} y="19" text-anchor="middle" class="dag-id">
              {step.id}
            </text>
            <text x={NODE_WIDTH / 2} y="36" text-anchor="middle" class="dag-detail">
              {step.status ? step.status : (step.detail ?? "")}
            </text>
          </g>
        );
      })}
    </svg>
  );
}
