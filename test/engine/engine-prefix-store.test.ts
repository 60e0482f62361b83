/**
 * @module The prefix store on real llama.cpp: with one session slot, each new
 * app's session evicts the previous app's idle prefix from the slot, so
 * without the store every return to an app prefills its system prompt again.
 * With a store of two sequences the app's shared prefix survives: the next
 * session of the app forks it from the store (and continues exactly as a
 * session that prefilled everything), the engine keeps advertising the app's
 * prefix hashes while no session slot holds it, and a third app replaces the
 * least recently used entry.
 */
import t from "tap";
import { prefixHashChain, type ToolSpec } from "../../common/src/index.js";
import type { Engine } from "../../engine-pod/src/engine/index.js";
import { startEngine, TOOLS } from "./engine-fixture.js";

const SYSTEMS = {
  a: "You are the support agent of a bicycle shop. ".repeat(8),
  b: "You write short poems about the weather in the mountains. ".repeat(8),
  c: "You translate shipping notices into plain words for customers. ".repeat(8),
};

/** The app-level hashes (system prompt, tool block) and the whole prompt's hash of a session. */
function hashes(system: string, prompt: string, tools: readonly ToolSpec[]): { app: string[]; full: string } {
  const chain = prefixHashChain({ messages: [{ role: "system", content: system }, { role: "user", content: prompt }], tools });
  return { app: chain.slice(0, 2), full: chain.at(-1)! };
}

async function run(engine: Engine, system: string, prompt: string, extra: { prefixReuse?: boolean } = {}) {
  const s = engine.createSession({ prompt, system, tools: TOOLS, temperature: 0, maxTokens: 12, ...extra });
  const done = await s.finished;
  return { s, done };
}

t.test("an app's shared prefix outlives its session slot in the store", async (t) => {
  const { engine } = await startEngine(t, { sequences: 1, prefixStore: 2 });
  t.equal(engine.stats().prefixStoreSize, 2);
  t.equal(engine.stats().totalSequences, 1, "store sequences are not session slots");

  const ref = await run(engine, SYSTEMS.a, "where is my order?", { prefixReuse: false });
  t.equal(ref.done.usage.prefilledTokens, ref.done.usage.promptTokens, "the reference prefilled its whole prompt");
  t.equal(engine.stats().prefixStoreEntries, 0, "a session without prefix reuse stores nothing");

  await run(engine, SYSTEMS.a, "my bell is broken");
  t.equal(engine.stats().prefixStoreEntries, 1, "app a's prefix is stored when its session ends");
  await run(engine, SYSTEMS.b, "snow tomorrow?");
  t.equal(engine.stats().prefixStoreEntries, 2, "app b's too");

  const a = hashes(SYSTEMS.a, "my bell is broken", TOOLS);
  const resident = engine.advertisedPrefixes().hashes;
  t.ok(a.app.every((h) => resident.includes(h)), "app a's system and tool hashes are still advertised");
  t.notOk(resident.includes(a.full), "its whole prompt is not (app b's session took the only slot)");

  const before = engine.stats();
  const again = await run(engine, SYSTEMS.a, "where is my order?");
  const after = engine.stats();
  t.equal(after.prefixStoreHits - before.prefixStoreHits, 1, "the session forked from the store");
  const forked = after.prefixForkedTokens - before.prefixForkedTokens;
  t.ok(forked > again.done.usage.promptTokens / 2, `forked ${forked} of ${again.done.usage.promptTokens} prompt tokens`);
  t.equal(again.done.usage.prefilledTokens, again.done.usage.promptTokens - forked, "prefilled only what the fork did not bring");
  t.same(again.s.inspect().tokens.sampled, ref.s.inspect().tokens.sampled, "the same greedy continuation as the full prefill");

  // a was used last, so c replaces b.
  await run(engine, SYSTEMS.c, "parcel delayed");
  const now = engine.advertisedPrefixes().hashes;
  t.ok(a.app.every((h) => now.includes(h)), "a stays");
  t.ok(hashes(SYSTEMS.c, "parcel delayed", TOOLS).app.every((h) => now.includes(h)), "c is stored");
  t.notOk(hashes(SYSTEMS.b, "snow tomorrow?", TOOLS).app.some((h) => now.includes(h)), "b, least recently used, is gone");
  t.equal(engine.stats().prefixStoreEvictions, 1);
});

t.test("without the store, returning to an app prefills its prefix again", async (t) => {
  const { engine } = await startEngine(t, { sequences: 1 });
  await run(engine, SYSTEMS.a, "my bell is broken");
  await run(engine, SYSTEMS.b, "snow tomorrow?");
  const again = await run(engine, SYSTEMS.a, "where is my order?");
  // Only the chat template's opening tokens, common to every app, are left in the slot.
  t.ok(again.done.usage.prefilledTokens > 0.95 * again.done.usage.promptTokens, `prefilled ${again.done.usage.prefilledTokens} of ${again.done.usage.promptTokens}: app a's prefix was gone`);
  t.equal(engine.stats().prefixStoreEntries, 0);
});
