import { describe, expect, it } from "vitest";
import { UseEmbedder } from "../src/embedding/use-embedder.js";
import { computeCalibration } from "../src/search/query-calibration.js";
import { USE_CALIBRATION } from "../src/search/use-calibration.js";

describe("score calibration", () => {
  it("the default model's shipped calibration vectors are what the model makes of the reference texts", async () => {
    const embedder = new UseEmbedder();
    expect(USE_CALIBRATION.model).toBe(embedder.id);
    const live = await computeCalibration(embedder);
    const shipped = USE_CALIBRATION.vectors();
    const close = (a: Float32Array, b: Float32Array) => a.every((x, i) => Math.abs(x - b[i]) < 1e-5);
    const hint = "regenerate with: npm run build && node packages/registry/scripts/use-calibration.mjs";
    expect(close(live.centroid, shipped.centroid), hint).toBe(true);
    expect(live.unreadable).toHaveLength(shipped.unreadable.length);
    for (const [i, vector] of live.unreadable.entries()) {
      expect(close(vector, shipped.unreadable[i]), hint).toBe(true);
    }
  }, 120_000);
});
