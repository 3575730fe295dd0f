/** Told about every mq9 request the service answered; metrics plug in here. */
export interface RequestObserver {
  observe(op: string, failed: boolean, seconds: number): void;
}
