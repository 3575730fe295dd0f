/** Delivery classes, most urgent first: FETCH returns critical, then urgent, then normal. */
export const PRIORITIES = ["critical", "urgent", "normal"] as const;
export type Priority = (typeof PRIORITIES)[number];

/** Rank used for ordering: lower is delivered first. */
export const priorityRank: Record<Priority, number> = { critical: 0, urgent: 1, normal: 2 };

export function isPriority(value: string): value is Priority {
  return (PRIORITIES as readonly string[]).includes(value);
}
