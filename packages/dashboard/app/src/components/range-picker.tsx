/** The history ranges a page offers, in seconds: up to an hour in 5 s samples, beyond in 1 min ones. */
export const RANGES = [
  [900, "15 min"],
  [3600, "1 h"],
  [6 * 3600, "6 h"],
  [24 * 3600, "24 h"],
] as const;

/** Buttons choosing how far back the charts reach. */
export function RangePicker({ range, onChange }: { range: number; onChange: (seconds: number) => void }) {
  return (
    <div class="tabs range" data-testid="range-picker">
      {RANGES.map(([seconds, label]) => (
        <button
          type="button"
          key={seconds}
          class={seconds === range ? "on" : ""}
          data-range={seconds}
          onClick={() => onChange(seconds)}
        >
          {label}
        </button>
      ))}
    </div>
  );
}
