import type { ApiFailure } from "../api";

/** The API's own error text, shown where the data would be (e.g. "the orchestrator is off …"). */
export function Failure({ error }: { error?: ApiFailure }) {
  if (!error) return null;
  return (
    <div class="notice" role="alert" data-code={error.code}>
      {error.message}
    </div>
  );
}

export function Loading() {
  return <div class="muted">loading…</div>;
}
