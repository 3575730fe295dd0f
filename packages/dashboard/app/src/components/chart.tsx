import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

export interface ChartSeries {
  label: string;
  color: string;
  /** null where the broker has no sample (a gap in the line). */
  values: (number | null)[];
}

/** A small time-series chart (uPlot) over unix-ms times. */
export function Chart({
  title,
  times,
  series,
  id,
}: {
  title: string;
  times: number[];
  series: ChartSeries[];
  id?: string;
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot>();
  const data = [times.map((t) => t / 1000), ...series.map((s) => s.values)] as uPlot.AlignedData;
  useEffect(() => {
    if (!box.current) return;
    plot.current = new uPlot(
      {
        width: 360,
        height: 150,
        legend: { show: true },
        cursor: { show: true },
        scales: { x: { time: true } },
        axes: [{ stroke: "#889" }, { stroke: "#889", size: 50 }],
        series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2 }))],
      },
      data,
      box.current,
    );
    return () => plot.current?.destroy();
    // The series' shape is fixed for a chart; new values come through setData below.
  }, [series.length]);
  useEffect(() => {
    plot.current?.setData(data);
  });
  return (
    // data-points: how many samples it draws (what a test can read of a canvas).
    <div class="chart" data-testid={id && `chart-${id}`} data-points={times.length}>
      <h3>{title}</h3>
      <div ref={box} />
    </div>
  );
}
