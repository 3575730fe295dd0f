import type { MetricsSample } from "@mq9/broker/api";
import { createContext } from "preact";
import { useContext, useEffect, useState } from "preact/hooks";
import { ApiFailure, get } from "./api";

/** The live stream's state shared by every page: the latest sample and a counter that moves with it. */
export interface Live {
  tick: number;
  sample?: MetricsSample;
}

export const LiveContext = createContext<Live>({ tick: 0 });

export function useLive(): Live {
  return useContext(LiveContext);
}

export interface Loaded<T> {
  data?: T;
  error?: ApiFailure;
  reload(): void;
}

/** GETs `path` now and again on every live tick (no manual refresh); keeps the last good answer. */
export function useLiveGet<T>(path: string | undefined): Loaded<T> {
  const { tick } = useLive();
  const [state, setState] = useState<{ data?: T; error?: ApiFailure; path?: string }>({});
  const [nudge, setNudge] = useState(0);
  useEffect(() => {
    if (!path) return;
    const aborted = new AbortController();
    get<T>(path, aborted.signal).then(
      (data) => setState({ data, path }),
      (error: unknown) => {
        if (aborted.signal.aborted) return;
        const failure =
          error instanceof ApiFailure ? error : new ApiFailure(0, "NETWORK", (error as Error).message);
        setState((old) => ({ data: old.path === path ? old.data : undefined, error: failure, path }));
      },
    );
    return () => aborted.abort();
  }, [path, tick, nudge]);
  return {
    data: state.path === path ? state.data : undefined,
    error: state.path === path ? state.error : undefined,
    reload: () => setNudge((n) => n + 1),
  };
}
