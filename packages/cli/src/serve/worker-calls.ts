// Calls to an object that lives on a worker thread, typed by one API definition: the caller's
// proxy and the worker's dispatcher are both derived from the same list of method names, and
// failures travel as data (see failure-converter.ts).
import { type Failure, toError, toFailure } from "./failure-converter.js";

/** The names of an API's methods (optional ones included). */
export type MethodOf<Api> = {
  [K in keyof Api]-?: NonNullable<Api[K]> extends (...args: never[]) => unknown ? K : never;
}[keyof Api] &
  string;

/** An API as seen from the other thread: the same methods, each answering with a promise. */
export type Remote<Api> = {
  [K in MethodOf<Api>]-?: NonNullable<Api[K]> extends (...args: infer A) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : never;
};

/** One call, caller → worker. */
export interface CallMessage {
  type: "call";
  id: number;
  method: string;
  args: unknown[];
}

/** The answer to one call, worker → caller. */
export type ReplyMessage =
  | { type: "result"; id: number; value: unknown }
  | { type: "error"; id: number; failure: Failure };

/**
 * The list of an API's methods that may be called across threads. Listing every method is
 * checked by the compiler: `ApiDefinition<Api>` fails to type-check when one is missing.
 */
export type ApiDefinition<Api> = readonly MethodOf<Api>[];

/** The worker's side: answers each call by invoking the named method of `target`. */
export class CallDispatcher<Api extends object> {
  private readonly methods: ReadonlySet<string>;

  constructor(
    private readonly target: Api,
    definition: ApiDefinition<Api>,
    private readonly reply: (message: ReplyMessage) => void,
  ) {
    this.methods = new Set(definition);
  }

  /** Runs one call and posts its result or its failure. */
  dispatch({ id, method, args }: CallMessage): void {
    const fn: unknown = this.methods.has(method) ? Reflect.get(this.target, method) : undefined;
    if (typeof fn !== "function") {
      this.reply({ type: "error", id, failure: { kind: "other", message: `unknown call ${method}` } });
      return;
    }
    Promise.resolve()
      .then(() => fn.apply(this.target, args))
      .then((value: unknown) => this.reply({ type: "result", id, value }))
      .catch((err: unknown) => this.reply({ type: "error", id, failure: toFailure(err) }));
  }
}

/** The caller's side: a typed proxy whose every method posts a call and awaits its reply. */
export class CallForwarder<Api extends object> {
  private readonly pending = new Map<number, { resolve(value: unknown): void; reject(err: Error): void }>();
  private nextId = 0;
  /** The API, forwarded. */
  readonly api: Remote<Api>;

  /** `post` sends a call, or throws when the worker is gone (the call then fails with that error). */
  constructor(definition: ApiDefinition<Api>, post: (message: CallMessage) => void) {
    const forward =
      (method: string) =>
      (...args: unknown[]): Promise<unknown> =>
        new Promise((resolve, reject) => {
          const id = this.nextId++;
          this.pending.set(id, { resolve, reject });
          try {
            post({ type: "call", id, method, args });
          } catch (err) {
            this.pending.delete(id);
            reject(err);
          }
        });
    this.api = Object.fromEntries(definition.map((method) => [method, forward(method)])) as Remote<Api>;
  }

  /** Settles the call a reply answers. */
  settle(reply: ReplyMessage): void {
    const call = this.pending.get(reply.id);
    this.pending.delete(reply.id);
    if (reply.type === "result") call?.resolve(reply.value);
    else call?.reject(toError(reply.failure));
  }

  /** Fails every call still waiting (the worker is gone). */
  failAll(err: Error): void {
    for (const call of this.pending.values()) call.reject(err);
    this.pending.clear();
  }
}

/**
 * An API definition that names every method of `Api`: a method left out is a compile error
 * that names it, so the proxy and the dispatcher cannot fall behind the interface.
 */
export function defineApi<Api>() {
  return <const Methods extends readonly MethodOf<Api>[]>(
    methods: Methods &
      ([MethodOf<Api>] extends [Methods[number]]
        ? unknown
        : { missing: Exclude<MethodOf<Api>, Methods[number]> }),
  ): ApiDefinition<Api> => methods;
}
