import t from "tap";
import { bfclToJsonSchema } from "../../bench/bfcl/bfcl-schema.js";
import { DEFAULT_LATENCY, drawLatencyMs, latencyMeanMs, mulberry32 } from "../../bench/bfcl/seeded-random.js";

t.test("BFCL types become JSON Schema types", async (t) => {
  const schema = bfclToJsonSchema({
    type: "dict",
    properties: {
      x: { type: "float", description: "x" },
      n: { type: "integer" },
      pair: { type: "tuple", items: { type: "float" } },
      meta: { type: "dict", properties: { k: { type: "string", enum: ["a", "b"] } } },
      anything: { type: "any" },
      flags: { type: "array", items: { type: "boolean" } },
      opt: { type: "string", default: "None" },
    },
    required: ["x"],
  });
  t.same(schema, {
    type: "object",
    required: ["x"],
    properties: {
      x: { type: "number", description: "x" },
      n: { type: "integer" },
      pair: { type: "array", items: { type: "number" } },
      meta: { type: "object", properties: { k: { type: "string", enum: ["a", "b"] } } },
      anything: {},
      flags: { type: "array", items: { type: "boolean" } },
      opt: { type: "string" },
    },
  });
});

t.test("unknown BFCL types are rejected, not guessed", async (t) => {
  t.throws(() => bfclToJsonSchema({ type: "complex" }), /unknown BFCL parameter type "complex"/);
});

t.test("seeded latencies: reproducible, in range, mean near the paper's 110 ms", async (t) => {
  const a = mulberry32(7);
  const b = mulberry32(7);
  const xs = Array.from({ length: 20000 }, () => drawLatencyMs(a));
  t.same(xs.slice(0, 50), Array.from({ length: 50 }, () => drawLatencyMs(b)));
  t.ok(xs.every((x) => x >= DEFAULT_LATENCY.minMs && x <= DEFAULT_LATENCY.maxMs));
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  t.ok(Math.abs(mean - latencyMeanMs()) < 3, `sample mean ${mean.toFixed(1)} vs analytic ${latencyMeanMs().toFixed(1)}`);
  t.ok(Math.abs(latencyMeanMs() - 110) < 1, `analytic mean ${latencyMeanMs()}`);
  const base = drawLatencyMs(mulberry32(1));
  t.ok(Math.abs(drawLatencyMs(mulberry32(1), DEFAULT_LATENCY, 2) - 2 * base) <= 1, "the scale multiplies the draw");
});
