/**
 * @module The speculation bench's rows for one setting: time saved and the
 * paired ratio from each task against its own no-speculation run, hit rates
 * per mode, and the paper's equations at the set α for a scripted draft, or
 * at the hit rate a real draft reached (α not set).
 */
import t from "tap";
import { clientSideTimeSaved } from "../../engine-pod/src/speculation/analytic.js";
import { summarize, type Measured, type Run, type Speculation } from "../../bench/speculation/summary.js";
import type { BenchTask } from "../../bench/bfcl/workloads.js";

const task = (id: string): BenchTask => ({ id, calls: [{ latencyMs: 1000 }, { latencyMs: 1000 }] }) as unknown as BenchTask;

function run(id: string, totalMs: number, spec?: { hits: number; misses: number; draftRuns: number; draftMs: number }): Run {
  return {
    task: task(id),
    done: {
      type: "done",
      reason: "eos",
      timings: { totalMs, tpotMs: 20, ttftMs: 200 },
      usage: { promptTokens: 100, decodedTokens: 120 },
      ...(spec !== undefined ? { speculation: { ...spec, wastedToolMs: 0, draftTokensAccepted: 0 } } : {}),
    } as unknown as Run["done"],
    segments: { turns: [{ generationMs: 1500, toolMs: 1000, reentryMs: 0 }, { generationMs: 1500, toolMs: 1000, reentryMs: 0 }], tailMs: 0 },
  };
}

function measured(): Map<Speculation, Measured> {
  const m = (runs: Run[]): Measured => ({ runs, failed: [], wallMs: 10_000 });
  return new Map<Speculation, Measured>([
    ["none", m([run("a", 6000), run("b", 8000)])],
    // The client-side draft hit 3 of 4 calls: α 0.75.
    ["client", m([run("a", 4800, { hits: 2, misses: 0, draftRuns: 2, draftMs: 400 }), run("b", 7200, { hits: 1, misses: 1, draftRuns: 2, draftMs: 400 })])],
    ["client+engine", m([run("a", 4200, { hits: 1, misses: 1, draftRuns: 2, draftMs: 400 }), run("b", 6400, { hits: 1, misses: 1, draftRuns: 2, draftMs: 400 })])],
  ]);
}
const setting = { calling: "sync" as const, toolMs: 1000, agents: 1, thinkTokens: 0 };

t.test("a real draft: the equations at the hit rate it reached", async (t) => {
  const rows = summarize(measured(), { ...setting, alpha: Number.NaN });
  t.same(rows.map((r) => r.speculation), ["none", "client", "client+engine"]);
  t.ok(rows.every((r) => r.draft === "model" && r.alpha === 0.75), "α is the client-side draft's measured hit rate, in every row");
  const client = rows[1]!;
  t.equal(client.hit_rate, 0.75);
  t.equal(rows[2]!.hit_rate, 0.5);
  t.equal(client.time_saved, 0.143, "time saved: 1 − 6000/7000 mean turn time");
  t.equal(client.paired_ratio_p50, 0.85, "paired: the median of 0.8 and 0.9");
  // T = 1000 ms; G = 3500 − 1000 (a turn without speculation is 7000/2 ms); g = 200 ms a draft run.
  t.equal(client.predicted_time_saved, Math.round(clientSideTimeSaved({ alpha: 0.75, G: 2500, g: 200, T: 1000 }) * 1000) / 1000, "Eq. 2 at α 0.75");
  t.equal(client.g_over_G, 0.08);
  t.equal(rows[0]!.predicted_time_saved, 0, "no speculation predicts nothing");
});

t.test("a scripted draft: the equations at the α that was set, whatever it hit", async (t) => {
  const rows = summarize(measured(), { ...setting, alpha: 0.8 });
  t.ok(rows.every((r) => r.draft === "scripted" && r.alpha === 0.8));
  t.equal(rows[1]!.predicted_time_saved, Math.round(clientSideTimeSaved({ alpha: 0.8, G: 2500, g: 200, T: 1000 }) * 1000) / 1000);
  t.equal(rows[1]!.hit_rate, 0.75, "the hit rate is still the measured one");
});
