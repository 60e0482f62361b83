/**
 * @module Prefix sharing between live sessions on real llama.cpp: a session
 * whose prompt starts with what another live sequence already holds (the CML
 * system prompt with the same tools) gets that prefix by llama.cpp's sequence
 * copy instead of prefilling it again, and continues exactly as a session that
 * prefilled everything itself.
 */
import t from "tap";
import { startEngine, TOOLS } from "./engine-fixture.js";

const { engine } = await startEngine(t, { sequences: 3 });

async function firstText(s: { events: readonly { type: string }[]; subscribe(l: (e: { type: string }) => void): () => void }): Promise<void> {
  if (s.events.some((e) => e.type === "text")) return;
  await new Promise<void>((resolve) => {
    const off = s.subscribe((e) => {
      if (e.type === "text") (off(), resolve());
    });
  });
}

t.test("a second session forks the shared system prompt from a live one", async (t) => {
  const system = "You are the support agent of a bicycle shop. ".repeat(8);
  // Reference: the same request, prefilled from scratch (no reuse, no fork).
  const ref = engine.createSession({ prompt: "where is my order?", system, tools: TOOLS, temperature: 0, maxTokens: 30, prefixReuse: false });
  const refDone = await ref.finished;
  t.equal(refDone.usage.prefilledTokens, refDone.usage.promptTokens, "the reference prefilled its whole prompt");

  const a = engine.createSession({ prompt: "keep talking about bicycles", system, tools: TOOLS, maxTokens: 100_000 });
  await firstText(a); // a's prompt is in its cells
  const before = engine.stats();
  const b = engine.createSession({ prompt: "where is my order?", system, tools: TOOLS, temperature: 0, maxTokens: 30 });
  const done = await b.finished;
  const after = engine.stats();
  t.equal(after.prefixForks - before.prefixForks, 1, "one prefix fork");
  const forked = after.prefixForkedTokens - before.prefixForkedTokens;
  t.ok(forked > done.usage.promptTokens / 2, `forked ${forked} of ${done.usage.promptTokens} prompt tokens`);
  t.equal(done.usage.prefilledTokens, done.usage.promptTokens - forked, "prefilled only what the fork did not bring");
  t.same(b.inspect().tokens.sampled, ref.inspect().tokens.sampled, "the same greedy continuation as the reference");
  engine.cancel(a.id);
  await a.finished;
});
