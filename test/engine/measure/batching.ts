/**
 * @module Measures the decode loop's batching on the `bench` model (not a
 * test; run with `npx tsx test/engine/measure/batching.ts`): aggregate decode
 * throughput with 1, 4 and 8 concurrent sessions, and ms per step of 4
 * sessions left on gapped sequence ids (1,3,5,7) with and without compaction.
 * Prints figures; asserts nothing (timings depend on the machine).
 */
import { createLogger } from "../../../common/src/index.js";
import { createEngine, type Executor } from "../../../engine-pod/src/engine/index.js";
import { ensureModel } from "../../../engine-pod/src/model/index.js";

const modelPath = await ensureModel({ preset: "bench" });
const executor: Executor = { execute: async (call) => ({ callId: call.id, ok: true, output: "ok" }), close: async () => {} };
const log = createLogger("measure", "warn");
const base = { modelPath, gpu: false as const, sequences: 8, contextSize: 1024, threads: 1, kvPolicy: "auto" as const, maxTokens: 48, prefixCache: false };

{
  const engine = await createEngine(base, executor, log, { calibrate: false });
  for (const n of [1, 4, 8]) {
    const t0 = performance.now();
    const sessions = Array.from({ length: n }, (_, i) => engine.createSession({ prompt: `hello ${i}`, temperature: 0 }));
    const done = await Promise.all(sessions.map((s) => s.finished));
    const ms = performance.now() - t0;
    const decoded = done.reduce((a, d) => a + d.usage.decodedTokens, 0);
    console.log(`${n} sessions: ${Math.round((decoded / ms) * 1000)} tok/s aggregate, median TPOT ${done[0]!.timings.tpotMs.toFixed(1)} ms`);
  }
  await engine.close();
}

for (const compaction of [false, true]) {
  const engine = await createEngine({ ...base, maxTokens: 100_000, compaction }, executor, log, { calibrate: false });
  const sessions = Array.from({ length: 8 }, (_, i) => engine.createSession({ prompt: `hello ${i}`, temperature: 0 }));
  while (engine.stats().tokensDecoded < 8 * 10) await new Promise((r) => setTimeout(r, 5));
  for (const i of [0, 2, 4, 6]) engine.cancel(sessions[i]!.id);
  await Promise.all([0, 2, 4, 6].map((i) => sessions[i]!.finished));
  await new Promise((r) => setTimeout(r, 300)); // let compaction moves finish
  const d0 = engine.stats().tokensDecoded;
  const t0 = performance.now();
  while (engine.stats().tokensDecoded - d0 < 4 * 60) await new Promise((r) => setTimeout(r, 2));
  const ms = (performance.now() - t0) / 60;
  console.log(`4 sessions left on ids 1,3,5,7, compaction ${compaction ? "on " : "off"}: ${ms.toFixed(1)} ms/step (${engine.stats().compactions} moves)`);
  await engine.close();
}
