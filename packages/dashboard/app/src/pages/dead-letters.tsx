import type { MailboxList, MessageItem, MessagePage, Purged, Retried } from "@mq9/broker/api";
import { useState } from "preact/hooks";
import { type ApiFailure, api } from "../api";
import { Failure, Loading } from "../components/notice";
import { PayloadView, payloadHint } from "../components/payload";
import { age } from "../format";
import { useLiveGet } from "../live";

/** The dead-letter mailboxes: each mailbox's `dead_letter` that exists, and any `*.dlq`. */
function deadLetterMailboxes(list: MailboxList): { address: string; from: string[]; messages: number }[] {
  const from = new Map<string, string[]>();
  for (const m of list.mailboxes)
    from.set(m.dead_letter, [...(from.get(m.dead_letter) ?? []), m.mail_address]);
  return list.mailboxes
    .filter((m) => from.has(m.mail_address) || m.mail_address.endsWith(".dlq"))
    .map((m) => ({ address: m.mail_address, from: from.get(m.mail_address) ?? [], messages: m.messages }));
}

/** The headers the broker puts on a dead letter (the protocol's `Headers.dlq*`, docs/protocol.md). */
const Headers = {
  dlqMailbox: "mq9-dlq-mailbox",
  dlqGroup: "mq9-dlq-group",
  dlqDeliveryCount: "mq9-dlq-delivery-count",
  dlqReason: "mq9-dlq-reason",
  dlqTime: "mq9-dlq-time",
} as const;

function header(message: MessageItem, name: string): string | undefined {
  return message.headers?.[name];
}

/** One dead-letter mailbox: its letters with where they failed, how often and why; retry and purge. */
function DeadLetterBox({ address }: { address: string }) {
  const base = `/api/v1/mailboxes/${encodeURIComponent(address)}`;
  const page = useLiveGet<MessagePage>(`${base}/browse?limit=100`);
  const [selected, setSelected] = useState<number>();
  const [notice, setNotice] = useState<string>();
  const act = async (question: string, run: () => Promise<string>) => {
    if (!window.confirm(question)) return;
    try {
      setNotice(await run());
      page.reload();
    } catch (err) {
      setNotice((err as ApiFailure).message);
    }
  };
  const retry = (msgId?: number) =>
    act(
      msgId === undefined
        ? `Send every dead letter of ${address} back to its mailbox?`
        : `Send dead letter ${msgId} back to its mailbox?`,
      async () => {
        const reply = await api<Retried>(
          "POST",
          `${base}/retry`,
          msgId === undefined ? {} : { msg_id: msgId },
        );
        return `sent back ${reply.retried}`;
      },
    );
  const purge = () =>
    act(`Delete every dead letter of ${address}? They cannot be retried afterwards.`, async () => {
      const reply = await api<Purged>("POST", `${base}/purge`);
      return `purged ${reply.purged}`;
    });
  const chosen = page.data?.messages.find((m) => m.msg_id === selected);
  return (
    <div class="dlq" data-dlq={address}>
      <h3>
        <a href={`#/mailboxes/${encodeURIComponent(address)}`}>{address}</a>
      </h3>
      <Failure error={page.error} />
      <div class="split">
        <table data-testid="dead-letter-table">
          <thead>
            <tr>
              <th class="num">msg_id</th>
              <th>from</th>
              <th class="num">deliveries</th>
              <th>reason</th>
              <th>when</th>
              <th>payload</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {page.data?.messages.map((m) => {
              const time = header(m, Headers.dlqTime);
              return (
                <tr
                  key={m.msg_id}
                  data-msg-id={m.msg_id}
                  class={m.msg_id === selected ? "selected" : ""}
                  onClick={() => setSelected(m.msg_id)}
                >
                  <td class="num">{m.msg_id}</td>
                  <td>
                    {header(m, Headers.dlqMailbox) ?? "—"}
                    {header(m, Headers.dlqGroup) && (
                      <span class="muted"> / {header(m, Headers.dlqGroup)}</span>
                    )}
                  </td>
                  <td class="num" data-col="deliveries">
                    {header(m, Headers.dlqDeliveryCount) ?? ""}
                  </td>
                  <td data-col="reason">{header(m, Headers.dlqReason) ?? ""}</td>
                  <td>{time === undefined ? "" : age(Number(time) * 1000)}</td>
                  <td class="clip">{payloadHint(m)}</td>
                  <td>
                    <button
                      type="button"
                      data-testid="retry-one"
                      onClick={(e) => {
                        e.stopPropagation();
                        void retry(m.msg_id);
                      }}
                    >
                      retry
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
        <div>{chosen && <PayloadView message={chosen} key={chosen.msg_id} />}</div>
      </div>
      {page.data?.messages.length === 0 && <div class="muted">no dead letters</div>}
      <div class="actions">
        <button type="button" onClick={() => retry()} data-testid="retry-all">
          retry all
        </button>
        <button type="button" class="danger" onClick={purge} data-testid="purge-dead-letters">
          purge
        </button>
        {notice && (
          <span class="muted" data-testid="dlq-notice">
            {notice}
          </span>
        )}
      </div>
    </div>
  );
}

/** Every dead-letter mailbox, with its letters and the buttons to retry or purge them. */
export function DeadLetters() {
  const list = useLiveGet<MailboxList>("/api/v1/mailboxes?limit=1000");
  const boxes = list.data ? deadLetterMailboxes(list.data) : [];
  return (
    <section>
      <h2>Dead letters</h2>
      <p class="muted">
        Messages that used up their deliveries or were NAKed as terminal, in each mailbox&apos;s dead-letter
        mailbox. Retry sends one back to the mailbox it came from.
      </p>
      <Failure error={list.error} />
      {!list.data && !list.error && <Loading />}
      {list.data && boxes.length === 0 && <div class="muted">no dead-letter mailbox holds anything yet</div>}
      {boxes.map((box) => (
        <DeadLetterBox address={box.address} key={box.address} />
      ))}
    </section>
  );
}
