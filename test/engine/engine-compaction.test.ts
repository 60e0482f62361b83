/**
 * @module Compaction on real llama.cpp: when a sequence id between busy ones
 * frees up, the session on the highest busy id moves down (state saved and loaded into the
 * lower sequence) so batches stay contiguous, and it continues exactly as if
 * it had never moved.
 */
import t from "tap";
import { sequenceOf, startEngine, TOOLS } from "./engine-fixture.js";

const { engine, runtime } = await startEngine(t, { sequences: 3, prefixCache: false });

async function firstText(s: { events: readonly { type: string }[]; subscribe(l: (e: { type: string }) => void): () => void }): Promise<void> {
  if (s.events.some((e) => e.type === "text")) return;
  await new Promise<void>((resolve) => {
    const off = s.subscribe((e) => {
      if (e.type === "text") (off(), resolve());
    });
  });
}

t.test("a freed slot between busy ones pulls the highest session down; its greedy continuation is unchanged", async (t) => {
  const request = { prompt: "move me", tools: TOOLS, temperature: 0, maxTokens: 120 } as const;
  // Reference: the same session alone, never moved.
  const ref = engine.createSession(request);
  await ref.finished;
  const refSampled = ref.inspect().tokens.sampled;

  const a = engine.createSession({ prompt: "first", tools: TOOLS, maxTokens: 100_000 });
  const b = engine.createSession({ prompt: "second", tools: TOOLS, maxTokens: 100_000 });
  const c = engine.createSession(request);
  t.same([a, b, c].map((s) => sequenceOf(runtime, s) === runtime.sequences[[a, b, c].indexOf(s)]), [true, true, true], "slots 0, 1, 2");
  await firstText(c);
  const before = engine.stats().compactions;
  engine.cancel(b.id); // slots 0 and 2 stay busy: a gap that splits every batch
  await b.finished;
  const doneC = await c.finished;
  t.equal(doneC.reason, "max_tokens");
  t.ok(engine.stats().compactions > before, "a session was moved");
  t.ok(sequenceOf(runtime, c) === runtime.sequences[1], "c (the highest) moved down into slot 1");
  t.ok(sequenceOf(runtime, a) === runtime.sequences[0], "a stayed in slot 0: ids 0-1 contiguous");
  t.same(c.inspect().tokens.sampled, refSampled, "c's greedy samples are the reference's");
  engine.cancel(a.id);
  await a.finished;
});
