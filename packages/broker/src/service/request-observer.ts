/** Told about every mq9 request the service answered; metrics plug in here. */
export interface RequestObserver {
  /** `mailAddress` is the mailbox a MSG request named (SEND, FETCH, ...), undefined for the others. */
  observe(op: string, failed: boolean, seconds: number, mailAddress?: string): void;
}
