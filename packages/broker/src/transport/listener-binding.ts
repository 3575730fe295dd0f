import { isMq9Subject } from "@mq9/protocol";
import type { NatsListener, ServiceRequest } from "../nats/index.js";
import type { Mq9Service } from "../service/mq9-service.js";

/**
 * The hop from the embedded listener to the mq9 service: publishes on `$mq9.AI.*` go to the
 * service, its replies back to the requester's inbox, and each client has an abort signal,
 * fired when its connection closes, that ends its long-polls (a FETCH then leases nothing).
 */
export class ListenerBinding {
  private readonly clients = new Map<number, AbortController>();

  private constructor(
    private readonly listener: NatsListener,
    private readonly service: Mq9Service,
  ) {}

  /** Hands the listener's mq9 requests to `service` from now on. */
  static attach(listener: NatsListener, service: Mq9Service): ListenerBinding {
    const binding = new ListenerBinding(listener, service);
    listener.setService(isMq9Subject, binding.answer, binding.clientClosed);
    return binding;
  }

  /** One request from a client: answered by the service, the reply sent to the request's inbox. */
  private readonly answer = (request: ServiceRequest): void => {
    // Built field by field: spreading the request cost more than the rest of this callback.
    const { subject, header, payload, reply: to, clientId, principal } = request;
    const signal = this.signalOf(clientId);
    this.service.answer({ subject, header, payload, signal, principal }, (reply, prompt) => {
      if (to) this.listener.reply(to, reply, prompt, clientId);
    });
  };

  /** A client's connection closed: what waits on its behalf stops. */
  private readonly clientClosed = (clientId: number): void => {
    this.clients.get(clientId)?.abort();
    this.clients.delete(clientId);
  };

  private signalOf(clientId: number): AbortSignal {
    let controller = this.clients.get(clientId);
    if (!controller) {
      controller = new AbortController();
      this.clients.set(clientId, controller);
    }
    return controller.signal;
  }
}
