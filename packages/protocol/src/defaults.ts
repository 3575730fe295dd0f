/** Protocol-level defaults shared by broker and clients. */
export const Defaults = {
  port: 4332,
  tlsPort: 4332,
  httpPort: 8332,
  maxPayload: 1024 * 1024,
  fetchNumMsgs: 100,
  fetchMaxWaitMs: 500,
  queryLimit: 100,
  queryMaxLimit: 100,
  discoverLimit: 20,
  /**
   * A `min_score` for routing a request to one agent by meaning: calibrated DISCOVER scores
   * below it are too weak to act on (see docs/registry.md, "Scores").
   */
  intentMinScore: 0.2,
} as const;
