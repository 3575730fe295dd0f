/**
 * The broker's spans, seen from the service: a span per request, with children for the store
 * commit of a SEND and the long-poll wait of a FETCH. Absent (undefined) when tracing is off,
 * so the service pays one check per request and loads nothing of OpenTelemetry.
 */
export interface RequestTracing {
  /** Starts the span of one request; `header` is its NATS header block, whose traceparent is the parent. */
  request(op: string, mailAddress: string | undefined, header: Uint8Array | undefined): RequestSpan;
}

/** The span of one request. */
export interface RequestSpan {
  /** Starts a child span (`store commit`, `long-poll wait`); call the result to end it. */
  child(name: string): () => void;
  /** Sets an attribute, e.g. `messaging.message.id` once a SEND is stored. */
  set(name: string, value: string | number): void;
  /** Ends the span; with `err`, as failed. */
  end(err?: unknown): void;
}
