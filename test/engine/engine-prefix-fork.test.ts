/**
 * @module Prefix sharing between live sessions on real llama.cpp: a session
 * whose prompt starts with what another live sequence already holds (the CML
 * system prompt with the same tools) gets that prefix by llama.cpp's sequence
 * copy instead of prefilling it again, and continues exactly as a session that
 * prefilled everything itself.
 */
import t from "tap";
import { prefixHashChain } from "../../common/src/index.js";
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

t.test("a session admitted while another still prefills the shared prefix waits for that fill and forks it", async (t) => {
  // Long enough that the first fill spans several prefill chunks; its own opening, so no earlier test's cells hold it.
  const system = "Lyon branch. " + "You are the support agent of a bicycle shop. ".repeat(16);
  const ref = engine.createSession({ prompt: "where is my order?", system, tools: TOOLS, temperature: 0, maxTokens: 30, prefixReuse: false });
  await ref.finished;

  const before = engine.stats();
  // Back to back, as a router sends an app's sessions to the engine that advertises its prefix.
  const a = engine.createSession({ prompt: "keep talking about bicycles", system, tools: TOOLS, maxTokens: 8 });
  const chain = prefixHashChain({ messages: [{ role: "system", content: system }, { role: "user", content: "keep talking about bicycles" }], tools: TOOLS });
  const filling = engine.advertisedPrefixes();
  t.ok(chain.every((h) => filling.hashes.includes(h) && filling.filling.includes(h)), "advertised at once, as being filled");
  const b = engine.createSession({ prompt: "where is my order?", system, tools: TOOLS, temperature: 0, maxTokens: 30 });
  const [doneA, doneB] = await Promise.all([a.finished, b.finished]);
  const after = engine.stats();
  const held = engine.advertisedPrefixes();
  t.ok(chain.every((h) => held.hashes.includes(h) && !held.filling.includes(h)), "once filled, advertised as held");
  t.equal(after.prefixFillWaits - before.prefixFillWaits, 1, "the second admission waited for the first one's fill");
  t.ok(
    doneA.usage.prefilledTokens > 0.9 * doneA.usage.promptTokens,
    `the first session prefilled ${doneA.usage.prefilledTokens} of its ${doneA.usage.promptTokens} prompt tokens (a cached slot may hold the template's opening)`,
  );
  t.ok(
    doneB.usage.prefilledTokens < doneB.usage.promptTokens / 4,
    `the second prefilled ${doneB.usage.prefilledTokens} of its ${doneB.usage.promptTokens} prompt tokens`,
  );
  const prefilled = after.tokensPrefilled - before.tokensPrefilled;
  t.ok(prefilled < doneA.usage.promptTokens + doneB.usage.promptTokens / 4, `the engine prefilled ${prefilled} tokens for both: the shared prefix once`);
  t.same(b.inspect().tokens.sampled, ref.inspect().tokens.sampled, "the same greedy continuation as a session that prefilled everything");
});

t.test("a follower whose source is cancelled mid-fill still gets its whole prompt, and the same continuation", async (t) => {
  const system = "Porto branch. " + "You are the support agent of a bicycle shop. ".repeat(16);
  const ref = engine.createSession({ prompt: "is it in stock?", system, tools: TOOLS, temperature: 0, maxTokens: 30, prefixReuse: false });
  const refDone = await ref.finished;
  const before = engine.stats();
  const a = engine.createSession({ prompt: "keep talking about bicycles", system, tools: TOOLS, maxTokens: 8 });
  const b = engine.createSession({ prompt: "is it in stock?", system, tools: TOOLS, temperature: 0, maxTokens: 30 });
  engine.cancel(a.id);
  const [doneA, doneB] = await Promise.all([a.finished, b.finished]);
  t.equal(engine.stats().prefixFillWaits - before.prefixFillWaits, 1, "the second admission followed the first");
  t.equal(doneA.reason, "cancelled");
  t.equal(doneB.reason, refDone.reason, "the follower finished as the reference did");
  t.same(b.inspect().tokens.sampled, ref.inspect().tokens.sampled, "the same greedy continuation as a session that prefilled everything");
});
