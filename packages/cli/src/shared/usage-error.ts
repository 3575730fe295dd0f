/** A usage problem found after parsing (two options that exclude each other, an unknown context): exit 2. */
export class UsageError extends Error {}
