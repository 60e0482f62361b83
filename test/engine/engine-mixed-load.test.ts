/**
 * @module A mixed workload on one engine (real llama.cpp): sessions in every
 * calling mode and trap policy, scripted and free, completions, user
 * interrupts and cancels, more requests than sequences. Every admitted
 * request ends cleanly, none errors, and afterwards no sequence is held.
 */
import t from "tap";
import { ErrorCode, InterlaceError, type CallingMode, type CreateSessionRequest, type KvPolicy, type SessionEvent } from "../../common/src/index.js";
import type { EngineSession } from "../../engine-pod/src/engine/index.js";
import { startEngine, TOOLS } from "./engine-fixture.js";

const SEQUENCES = 4;
const { engine } = await startEngine(t, { sequences: SEQUENCES, maxTokens: 200 });

/** A small deterministic PRNG (the workload is the same every run). */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => ((x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

t.test("every request ends cleanly and frees its sequence", async (t) => {
  const rnd = lcg(Number(process.env["MIXED_LOAD_SEED"] ?? 42)); // other seeds: stress runs
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const modes: CallingMode[] = ["async", "sync", "syncParallel"];
  const kvPolicies: KvPolicy[] = ["keep", "swap", "recompute", "auto"];
  const finished: Extract<SessionEvent, { type: "done" }>[] = [];
  const completions: Promise<unknown>[] = [];
  let rejected = 0;
  let admitted = 0;
  const live: EngineSession[] = [];

  for (let i = 0; i < 24; i++) {
    const scripted = rnd() < 0.7;
    const request: CreateSessionRequest = {
      prompt: `request ${i}`,
      tools: TOOLS,
      mode: pick(modes),
      kvPolicy: pick(kvPolicies),
      prefixReuse: rnd() < 0.5,
      temperature: rnd() < 0.5 ? 0 : 0.8,
      seed: i,
      maxTokens: 120,
      ...(scripted
        ? {
            policy: {
              type: "lpt-dag" as const,
              calls: [
                { id: "a", tool: "wait", arguments: { ms: Math.floor(rnd() * 60) }, dependsOn: [], estimatedLatencyMs: 40 },
                { id: "b", tool: "echo", arguments: { text: `t${i}` }, dependsOn: [] },
                { id: "c", tool: "wait", arguments: { ms: 5 }, dependsOn: ["a"], estimatedLatencyMs: 5 },
              ],
              thinkTokens: Math.floor(rnd() * 4),
              finalText: " done",
            },
          }
        : {}),
    };
    for (let attempt = 0; attempt < 5; attempt++) {
    try {
      if (rnd() < 0.2) {
        completions.push(engine.complete({ messages: [{ role: "user", content: `c${i}` }], tools: TOOLS, maxTokens: 20 }).catch((err: unknown) => {
          if (!(err instanceof InterlaceError && err.code === ErrorCode.Capacity)) throw err;
          rejected++;
        }));
      } else {
        const s = engine.createSession(request);
        admitted++;
        live.push(s);
        s.finished.then((d) => finished.push(d), () => undefined);
        if (rnd() < 0.3) setTimeout(() => engine.interrupt(s.id, { kind: "user", value: "hurry up" }), Math.floor(rnd() * 50));
        if (rnd() < 0.15) setTimeout(() => engine.cancel(s.id), Math.floor(rnd() * 80));
      }
      break;
    } catch (err) {
      if (!(err instanceof InterlaceError && err.code === ErrorCode.Capacity)) throw err;
      rejected++;
      // Retry once a session finishes (a client honouring Retry-After).
      const running = live.filter((s) => !s.events.some((e) => e.type === "done"));
      await Promise.race([...running.map((s) => s.finished), new Promise((r) => setTimeout(r, 200))]);
    }
    }
    await new Promise((r) => setTimeout(r, Math.floor(rnd() * 20)));
  }
  await Promise.all(live.map((s) => s.finished));
  await Promise.all(completions);
  t.equal(finished.length, admitted, `all ${admitted} admitted sessions finished (${rejected} rejected with capacity)`);
  t.same(finished.filter((d) => d.reason === "error"), [], "no session errored");
  t.ok(finished.every((d) => ["eos", "max_tokens", "cancelled"].includes(d.reason)));
  const stats = engine.stats();
  t.equal(stats.activeSessions, 0, "nothing live");
  // Every sequence is available again: as many new sessions as sequences are admitted.
  const again = Array.from({ length: SEQUENCES }, (_, i) => engine.createSession({ prompt: `again ${i}`, maxTokens: 3 }));
  const done = await Promise.all(again.map((s) => s.finished));
  t.ok(done.every((d) => d.reason === "max_tokens" || d.reason === "eos"), "all sequences serve again");
});
