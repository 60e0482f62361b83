/**
 * @module Prefix warming on real llama.cpp (the generated `test` model): a
 * router asks an idle engine to hold an app's shared prefix (system prompt
 * and tool block) in its prefix store, without a session. The next session
 * of the app forks it from the store and prefills only its own turn, with
 * the same greedy continuation as a full prefill; asking again is a no-op;
 * a warm is refused while a session prefills, and a second warm of another
 * prefix is refused while one runs, while a second ask for the same joins.
 * A session admitted while a warm fills its prefix (the first sessions on an
 * engine that just joined, warmed by the router) waits for the warm and
 * forks from the store instead of prefilling the prefix beside it.
 */
import t from "tap";
import { prefixHashChain, type CreateSessionRequest } from "../../common/src/index.js";
import { startEngine, TOOLS } from "./engine-fixture.js";

const SYSTEMS = {
  a: "You are the support agent of a bicycle shop. ".repeat(8),
  b: "You write short poems about the weather in the mountains. ".repeat(8),
  c: "You translate shipping notices into plain words for customers. ".repeat(8),
};

const request = (system: string, prompt: string, extra: Partial<CreateSessionRequest> = {}): CreateSessionRequest => ({ prompt, system, tools: TOOLS, temperature: 0, maxTokens: 12, ...extra });
const appHashes = (system: string): string[] => prefixHashChain({ messages: [{ role: "system", content: system }], tools: TOOLS });

t.test("a warmed prefix is forked by the app's next session instead of prefilled", async (t) => {
  const { engine } = await startEngine(t, { sequences: 2, prefixStore: 2 });
  const warm = engine.warmPrefix!.bind(engine);
  const before = engine.stats();
  const warmed = await warm(request(SYSTEMS.a, "anything"));
  t.equal(warmed.outcome, "warmed");
  t.ok(warmed.tokens > 100, `the shared prefix has ${warmed.tokens} tokens`);
  t.equal(warmed.prefilledTokens, warmed.tokens, "prefilled by the warm");
  t.same(warmed.hashes, appHashes(SYSTEMS.a), "the app's system and tool hashes, as a session's chain starts");
  const after = engine.stats();
  t.equal(after.prefixStoreEntries, 1, "held in the store");
  t.equal(after.activeSessions, 0, "no session was admitted");
  t.equal(after.tokensPrefilled - before.tokensPrefilled, warmed.tokens, "counted as prefilled");
  t.equal(after.tokensDecoded, before.tokensDecoded, "nothing generated");
  const advertised = engine.advertisedPrefixes();
  t.ok(warmed.hashes.every((h) => advertised.hashes.includes(h) && !advertised.filling.includes(h)), "advertised as held");

  const again = await warm(request(SYSTEMS.a, "another question"));
  t.equal(again.outcome, "held", "a second ask (another router replica) is a no-op");
  t.equal(again.prefilledTokens, 0);
  t.equal(engine.stats().prefixStoreEntries, 1);

  const s = engine.createSession(request(SYSTEMS.a, "where is my order?"));
  const done = await s.finished;
  const forkedStats = engine.stats();
  t.equal(forkedStats.prefixStoreHits - after.prefixStoreHits, 1, "the session forked from the store");
  t.ok(done.usage.prefilledTokens <= done.usage.promptTokens - warmed.tokens, `prefilled ${done.usage.prefilledTokens} of ${done.usage.promptTokens} prompt tokens (the warmed prefix has ${warmed.tokens})`);
  t.ok(done.usage.prefilledTokens < 40, "only the session's own turn");

  // The reference, prefilled from scratch: the forked session continued exactly as it.
  const ref = engine.createSession(request(SYSTEMS.a, "where is my order?", { prefixReuse: false }));
  const refDone = await ref.finished;
  t.equal(refDone.usage.prefilledTokens, refDone.usage.promptTokens);
  t.same(s.inspect().tokens.sampled, ref.inspect().tokens.sampled, "the same greedy continuation as the full prefill");
});

t.test("a session admitted while a warm fills its prefix follows the warm and forks from the store", async (t) => {
  const { engine } = await startEngine(t, { sequences: 2, prefixStore: 2 });
  const before = engine.stats();
  // Admitted in the same tick as the warm starts: its fill is under way, the store entry not yet held.
  const warming = engine.warmPrefix!(request(SYSTEMS.a, "anything"));
  const advertised = engine.advertisedPrefixes();
  t.ok(appHashes(SYSTEMS.a).every((h) => advertised.filling.includes(h)), "the warm's prefix is advertised as filling while it fills");
  const s = engine.createSession(request(SYSTEMS.a, "where is my order?"));
  const [warmed, done] = await Promise.all([warming, s.finished]);
  t.equal(warmed.outcome, "warmed");
  t.equal(warmed.prefilledTokens, warmed.tokens, "the warm prefilled the prefix");
  const after = engine.stats();
  t.equal(after.prefixFillWaits - before.prefixFillWaits, 1, "the session waited for the warm's fill");
  t.equal(after.prefixStoreHits - before.prefixStoreHits, 1, "and forked from the store");
  t.ok(done.usage.prefilledTokens <= done.usage.promptTokens - warmed.tokens, `the session prefilled ${done.usage.prefilledTokens} of ${done.usage.promptTokens} prompt tokens (the warm's prefix has ${warmed.tokens})`);
  t.equal(after.tokensPrefilled - before.tokensPrefilled, warmed.tokens + done.usage.prefilledTokens, "the prefix was evaluated once on the engine");

  const ref = engine.createSession(request(SYSTEMS.a, "where is my order?", { prefixReuse: false }));
  await ref.finished;
  t.same(s.inspect().tokens.sampled, ref.inspect().tokens.sampled, "the same greedy continuation as a full prefill");
});

t.test("warms are refused while a session prefills; one runs at a time, and a second ask for it joins", async (t) => {
  const { engine } = await startEngine(t, { sequences: 2, prefixStore: 2 });
  const warm = engine.warmPrefix!.bind(engine);
  const s = engine.createSession(request(SYSTEMS.b, "a long poem, please", { maxTokens: 64 }));
  const busy = await warm(request(SYSTEMS.c, "x"));
  t.equal(busy.outcome, "busy", "a session is prefilling");
  t.match(busy.reason, /prefilling/);
  await s.finished;

  const [first, joined, other] = await Promise.all([warm(request(SYSTEMS.c, "x")), warm(request(SYSTEMS.c, "y")), warm(request(SYSTEMS.a, "z"))]);
  t.equal(first.outcome, "warmed");
  t.equal(joined.outcome, "held", "the same prefix asked twice at once: one prefill");
  t.equal(other.outcome, "busy", "another prefix waits for the running warm");
  t.match(other.reason, /another prefix warm/);
  t.equal(engine.stats().prefixStoreEntries, 2, "b's prefix (stored when its session ended) and c's");

  // A prefix a session slot holds is copied, not prefilled.
  const copied = await warm(request(SYSTEMS.b, "another poem"));
  t.equal(copied.outcome, "held", "b's is in the store already");
});

t.test("a warm is a replica: it never replaces a home prefix, and a home prefix replaces it first", async (t) => {
  const { engine } = await startEngine(t, { sequences: 2, prefixStore: 1 });
  const warm = engine.warmPrefix!.bind(engine);
  // A session the router named this engine the home of: its prefix is stored as a home entry when it ends.
  await engine.createSession(request(SYSTEMS.b, "a poem", { maxTokens: 4 }), { prefixRole: "home" }).finished;
  t.same([engine.stats().prefixStoreEntries, engine.stats().prefixStoreHomes], [1, 1]);
  const full = await warm(request(SYSTEMS.c, "x"));
  t.equal(full.outcome, "full", "the only entry holds an app homed here");
  t.match(full.reason, /homed on this engine/);
  t.ok(appHashes(SYSTEMS.b).every((h) => engine.advertisedPrefixes().hashes.includes(h)), "b's prefix is still held");

  const { engine: fresh } = await startEngine(t, { sequences: 2, prefixStore: 1 });
  t.equal((await fresh.warmPrefix!(request(SYSTEMS.c, "x"))).outcome, "warmed", "an empty entry takes the warm");
  t.same([fresh.stats().prefixStoreEntries, fresh.stats().prefixStoreHomes], [1, 0], "as a replica");
  // Replicas replace replicas, least recently used first.
  await fresh.createSession(request(SYSTEMS.a, "where is my order?", { maxTokens: 4 }), { prefixRole: "replica" }).finished;
  t.same([fresh.stats().prefixStoreEvictions, fresh.stats().prefixStoreHomes], [1, 0], "a spilled session's replica replaced the warmed one");
  await fresh.createSession(request(SYSTEMS.b, "a poem", { maxTokens: 4 }), { prefixRole: "home" }).finished;
  t.same([fresh.stats().prefixStoreEvictions, fresh.stats().prefixStoreHomes], [2, 1], "a home prefix replaces a replica");
});

t.test("an engine without a prefix store, or a request without a shared prefix, is refused", async (t) => {
  const { engine } = await startEngine(t, { sequences: 1 });
  t.equal((await engine.warmPrefix!(request(SYSTEMS.a, "x"))).outcome, "no-store");
  const { engine: stored } = await startEngine(t, { sequences: 1, prefixStore: 1 });
  t.equal((await stored.warmPrefix!({ prompt: "just a question" })).outcome, "no-prefix");
  await t.rejects(stored.warmPrefix!(request(SYSTEMS.a, "word ".repeat(4000))), { code: "context_overflow" }, "a prompt over the context fails as createSession would");
});
