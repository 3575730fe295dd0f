let counter = 0;

/** A mailbox name unique within the test run (tests in parallel processes share a broker only by choice). */
export function boxName(prefix = "t"): string {
  counter += 1;
  return `${prefix}.${process.pid}.${counter}`;
}
