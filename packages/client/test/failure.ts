import { expect } from "vitest";
import { Mq9Error } from "../src/index.js";

/** The Mq9Error `promise` rejects with; fails the test when it resolves or rejects otherwise. */
export async function failure(promise: Promise<unknown>): Promise<Mq9Error> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Mq9Error);
  return err as Mq9Error;
}
