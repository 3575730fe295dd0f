import type { Envelope } from "../bus/envelope.js";
import type { TraceMemory } from "../memory/trace-memory.js";
import type { LazyAbort } from "./lazy-abort.js";

/** What a handler's context needs from its agent. */
export interface ContextSource<Fields extends object> {
  memory(traceId: string): TraceMemory;
  sendChild(parent: Envelope, fields: Fields): Promise<Envelope>;
}

/**
 * A handler's context (see MessageContext). A class, so its lazy parts are getters
 * on the prototype rather than accessors defined on a new object per message.
 */
export class HandlerContext<Fields extends object> {
  constructor(
    private readonly source: ContextSource<Fields>,
    private readonly message: Envelope,
    private readonly cancel: LazyAbort,
    readonly receivedAt: number,
  ) {}

  /** Made on first use: most handlers never touch the trace's memory. */
  get memory(): TraceMemory {
    return this.source.memory(this.message.trace_id);
  }

  get signal(): AbortSignal {
    return this.cancel.signal;
  }

  /** An own property bound to this context, so `{ send }` destructured from the context works. */
  readonly send = (fields: Fields): Promise<Envelope> => this.source.sendChild(this.message, fields);
}
