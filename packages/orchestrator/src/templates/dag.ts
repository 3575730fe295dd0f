/**
 * Orders nodes so that each comes after its dependencies (Kahn's algorithm,
 * keeping the declared order among ready nodes). Returns the cycle when there is one.
 */
export function topologicalOrder(
  nodes: readonly string[],
  dependsOn: (node: string) => readonly string[],
): { order: string[] } | { cycle: string[] } {
  const indegree = new Map(nodes.map((n) => [n, dependsOn(n).length]));
  const dependents = new Map<string, string[]>(nodes.map((n) => [n, []]));
  for (const node of nodes) for (const dep of dependsOn(node)) dependents.get(dep)?.push(node);
  const order: string[] = [];
  const ready = nodes.filter((n) => indegree.get(n) === 0);
  while (ready.length > 0) {
    const node = ready.shift()!;
    order.push(node);
    for (const next of dependents.get(node) ?? []) {
      const left = indegree.get(next)! - 1;
      indegree.set(next, left);
      if (left === 0) ready.push(next);
    }
  }
  if (order.length === nodes.length) return { order };
  return {
    cycle: findCycle(
      nodes.filter((n) => !order.includes(n)),
      dependsOn,
    ),
  };
}

function findCycle(candidates: string[], dependsOn: (node: string) => readonly string[]): string[] {
  const inCandidates = new Set(candidates);
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (node: string): string[] | undefined => {
    if (onPath.has(node)) return [...path.slice(path.indexOf(node)), node];
    onPath.add(node);
    path.push(node);
    for (const dep of dependsOn(node)) {
      if (!inCandidates.has(dep)) continue;
      const cycle = visit(dep);
      if (cycle) return cycle;
    }
    path.pop();
    onPath.delete(node);
    return undefined;
  };
  return visit(candidates[0]) ?? candidates;
}
