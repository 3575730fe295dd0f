import { formatTraceparent, Headers, parseTraceparent } from "@mq9/protocol";
import {
  type Attributes,
  type Context,
  context,
  createTraceState,
  isSpanContextValid,
  ProxyTracerProvider,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  type TracerProvider,
  trace,
} from "@opentelemetry/api";

/**
 * A tracer of the registered provider, through the API only: without an SDK registered by the
 * application every span is a no-op. Looked up again when the provider changed: a tracer taken
 * before the application registers its SDK through another copy of the API would stay a no-op.
 */
export function currentTracer(name: string): () => Tracer {
  let provider: TracerProvider | undefined;
  let cached: Tracer | undefined;
  return () => {
    const current = trace.getTracerProvider();
    if (current !== provider || cached === undefined) {
      provider = current;
      cached = current.getTracer(name);
    }
    return cached;
  };
}

const tracer = currentTracer("@mq9/client");

/**
 * Whether no tracer provider is registered (this copy of the API's proxy has no delegate): every
 * span would be a no-op, so none is started and a message's work allocates nothing for it.
 */
function tracingOff(): boolean {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider && provider.getDelegateTracer("@mq9/client") === undefined;
}

/** Span attribute names of the OpenTelemetry semantic conventions for messaging. */
export const MessagingAttributes = {
  system: "messaging.system",
  destination: "messaging.destination.name",
  operationType: "messaging.operation.type",
  operationName: "messaging.operation.name",
  messageId: "messaging.message.id",
  bodySize: "messaging.message.body.size",
  batchCount: "messaging.batch.message_count",
  consumerGroup: "messaging.consumer.group.name",
  errorType: "error.type",
} as const;

/** `messaging.system` of every mq9 span. */
export const MESSAGING_SYSTEM = "mq9";

function operation(type: string, name: string, address: string): Attributes {
  return {
    [MessagingAttributes.system]: MESSAGING_SYSTEM,
    [MessagingAttributes.destination]: address,
    [MessagingAttributes.operationType]: type,
    [MessagingAttributes.operationName]: name,
  };
}

/** The W3C headers that carry `span`'s context. */
export function traceHeaders(span: SpanContext): Record<string, string> {
  const headers: Record<string, string> = {
    [Headers.traceparent]: formatTraceparent({
      traceId: span.traceId,
      spanId: span.spanId,
      sampled: (span.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED,
    }),
  };
  const state = span.traceState?.serialize();
  if (state) headers[Headers.tracestate] = state;
  return headers;
}

/** The span context a message's `traceparent`/`tracestate` headers name, if they name one. */
export function messageSpanContext(headers: Readonly<Record<string, string>>): SpanContext | undefined {
  const parent = parseTraceparent(headers[Headers.traceparent]);
  if (parent === undefined) return undefined;
  const state = headers[Headers.tracestate];
  return {
    traceId: parent.traceId,
    spanId: parent.spanId,
    traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
    traceState: state ? createTraceState(state) : undefined,
  };
}

/** A span and the headers that carry it; undefined fields when nothing traces (no SDK, no trace). */
export interface StartedSpan {
  span: Span;
  headers: Record<string, string>;
}

function started(span: Span): StartedSpan | undefined {
  const spanContext = span.spanContext();
  return isSpanContextValid(spanContext) ? { span, headers: traceHeaders(spanContext) } : undefined;
}

/** A producer span for one SEND, a child of the active context. */
export function startSendSpan(address: string, bodySize: number): StartedSpan | undefined {
  if (tracingOff()) return undefined;
  return started(
    tracer().startSpan(`send ${address}`, {
      kind: SpanKind.PRODUCER,
      attributes: { ...operation("send", "send", address), [MessagingAttributes.bodySize]: bodySize },
    }),
  );
}

/** A client span for one FETCH: the broker's own FETCH span becomes its child. */
export function startFetchSpan(address: string, group: string | undefined): StartedSpan | undefined {
  if (tracingOff()) return undefined;
  const attributes = operation("receive", "fetch", address);
  if (group) attributes[MessagingAttributes.consumerGroup] = group;
  return started(tracer().startSpan(`fetch ${address}`, { kind: SpanKind.CLIENT, attributes }));
}

/** Marks what FETCH received: how many, and a link to each message's producer. */
export function fetched(
  span: Span,
  messages: readonly { headers: Readonly<Record<string, string>> }[],
): void {
  span.setAttribute(MessagingAttributes.batchCount, messages.length);
  for (const message of messages) {
    const producer = messageSpanContext(message.headers);
    if (producer) span.addLink({ context: producer });
  }
}

/**
 * A consumer span for handling one message, linked to the span that sent it and, when the
 * handler runs outside any trace, its child: a SEND and its handling then form one trace.
 * Returns the context to run the handler in.
 */
export function startProcessSpan(
  address: string,
  group: string | undefined,
  msgId: number,
  message: { readonly headers: Readonly<Record<string, string>> },
): { span: Span; context: Context } | undefined {
  // Before the headers are read: a message decodes them on first use, which costs when nothing traces.
  if (tracingOff()) return undefined;
  const producer = messageSpanContext(message.headers);
  const active = context.active();
  const parent =
    producer && trace.getSpan(active) === undefined ? trace.setSpanContext(active, producer) : active;
  const attributes = operation("process", "process", address);
  attributes[MessagingAttributes.messageId] = String(msgId);
  if (group) attributes[MessagingAttributes.consumerGroup] = group;
  const span = tracer().startSpan(
    `process ${address}`,
    { kind: SpanKind.CONSUMER, attributes, links: producer ? [{ context: producer }] : undefined },
    parent,
  );
  if (!isSpanContextValid(span.spanContext())) return undefined;
  return { span, context: trace.setSpan(parent, span) };
}

/** Ends a span; with `err`, as failed with the error's code (an Mq9Error's) or name. */
export function endSpan(span: Span, err?: unknown): void {
  if (err !== undefined) {
    const error = err instanceof Error ? err : new Error(String(err));
    const code = (error as { code?: unknown }).code;
    span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    span.setAttribute(MessagingAttributes.errorType, typeof code === "string" ? code : error.name);
  }
  span.end();
}
