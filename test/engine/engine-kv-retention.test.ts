/**
 * @module Retention under pressure on a real llama.cpp context: two sequences,
 * both held by sessions paused across a tool wait with their cells kept, and a
 * third request arrives. Under each policy the engine either hands one paused
 * session's sequence to the request (that session's state swapped or dropped,
 * restored when its result comes, and it finishes as it would have) or
 * refuses the request; which one yields is the policy's choice.
 */
import t, { type Test } from "tap";
import { ErrorCode, type CreateSessionRequest, type ToolSpec } from "../../common/src/index.js";
import type { Engine, EngineSession } from "../../engine-pod/src/engine/index.js";
import type { RetentionPolicy } from "../../engine-pod/src/kv/index.js";
import { eventsOf, startEngine, TOOLS } from "./engine-fixture.js";

// The wait tool declares no latency here: each session's estimate is its retention hint.
const tools: ToolSpec[] = TOOLS.map((x) => (x.name === "wait" ? { name: x.name, description: x.description, parameters: x.parameters } : x));

/** A session that pauses on a 1.5 s tool; `keep` makes its trap keep the cells whatever the trap-time rule, so only the pressure-time choice is tested. */
function pausedSession(engine: Engine, name: string, retention: CreateSessionRequest["retention"], keep: boolean): EngineSession {
  return engine.createSession({
    prompt: `paused session ${name}`,
    tools,
    ...(keep ? { kvPolicy: "keep" as const } : {}),
    policy: { type: "lpt-dag", calls: [{ id: "w", tool: "wait", arguments: { ms: 1500 }, dependsOn: [] }], finalText: " and so it ends" },
    prefixReuse: false,
    ...(retention !== undefined ? { retention } : {}),
  });
}

async function trapped(s: EngineSession): Promise<void> {
  if (s.events.some((e) => e.type === "trap")) return;
  await new Promise<void>((resolve) => {
    const off = s.subscribe((e) => {
      if (e.type === "trap") (off(), resolve());
    });
  });
}

/** Two sessions paused in turn (`first`, then `second`), then a request finding both sequences held. */
async function scenario(t: Test, policy: RetentionPolicy, hints: { first?: CreateSessionRequest["retention"]; second?: CreateSessionRequest["retention"] } = {}) {
  const { engine } = await startEngine(t, { sequences: 2, kvRetention: policy, prefixCache: false });
  const first = pausedSession(engine, "first", hints.first, policy !== "discard");
  await trapped(first);
  const second = pausedSession(engine, "second", hints.second, policy !== "discard");
  await trapped(second);
  // What the heartbeat advertises: the held sequences the policy would give a request now.
  const reclaimable = engine.stats().retention!.reclaimableSequences;
  let newcomer: string;
  try {
    newcomer = (await engine.createSession({ prompt: "a request arriving under pressure", tools, maxTokens: 10, prefixReuse: false }).finished).reason;
  } catch (err) {
    newcomer = (err as { code?: string }).code ?? String(err);
  }
  const [a, b] = await Promise.all([first.finished, second.finished]);
  const resumed = (s: EngineSession) => eventsOf(s.events, "resume")[0]?.decision;
  return { newcomer, reclaimable, first: { reason: a.reason, trap: eventsOf(first.events, "trap")[0]?.decision, resume: resumed(first) }, second: { reason: b.reason, resume: resumed(second) }, stats: engine.stats().retention! };
}

t.test("eta: the session expected to wait longest gives its cells; the one about to resume keeps them", async (t) => {
  // Paused first, but its tool should answer soon; paused second with a long tool ahead.
  const r = await scenario(t, "eta", { first: { expectedToolMs: 1500 }, second: { expectedToolMs: 60_000 } });
  t.equal(r.first.trap, "keep", "the traps kept the cells");
  t.equal(r.reclaimable, 2, "both waits hide a restore: both sequences are advertised as reclaimable");
  t.equal(r.newcomer, "max_tokens", "the request was admitted and served");
  t.equal(r.first.resume, "keep", "the session about to resume kept its cells");
  t.match(r.second.resume, /^(swap|recompute)$/, "the long waiter gave them up and was restored");
  t.equal(r.first.reason, "eos");
  t.equal(r.second.reason, "eos", "and finished as it would have");
  t.match(r.stats, { policy: "eta", admissionsDelayed: 1, admissionsRefused: 0 });
  t.equal(r.stats.evictionsByDecision.swap + r.stats.evictionsByDecision.recompute, 1);
  t.equal(r.stats.keptCells, 0, "no cells held once everyone finished");
});

t.test("lru: the least recently active gives its cells, whatever it waits for", async (t) => {
  const r = await scenario(t, "lru", { first: { expectedToolMs: 1500 }, second: { expectedToolMs: 60_000 } });
  t.equal(r.newcomer, "max_tokens");
  t.match(r.first.resume, /^(swap|recompute)$/, "the first paused yields");
  t.equal(r.second.resume, "keep");
  t.equal(r.first.reason, "eos");
  t.equal(r.second.reason, "eos");
});

t.test("pin: paused sessions keep their cells until their results; the request is refused", async (t) => {
  const r = await scenario(t, "pin");
  t.equal(r.reclaimable, 0, "nothing advertised");
  t.equal(r.newcomer, ErrorCode.Capacity);
  t.equal(r.first.resume, "keep");
  t.equal(r.second.resume, "keep");
  t.match(r.stats, { admissionsDelayed: 0, admissionsRefused: 1 });
});

t.test("ttl: pinned for the TTL (a request's retentionSeconds first); past it, the cells go", async (t) => {
  const r = await scenario(t, "ttl", { second: { retentionSeconds: 0 } });
  t.equal(r.reclaimable, 1, "only the session past its TTL is advertised");
  t.equal(r.newcomer, "max_tokens", "the session whose hint allows 0 s gave its cells");
  t.equal(r.first.resume, "keep", "the engine's 30 s TTL pins the other");
  t.match(r.second.resume, /^(swap|recompute)$/);
  t.equal(r.second.reason, "eos");
});

t.test("discard: every trap drops its cells, so the request takes a free sequence and the resumes re-prefill", async (t) => {
  const r = await scenario(t, "discard");
  t.equal(r.first.trap, "recompute");
  t.equal(r.newcomer, "max_tokens");
  t.match(r.stats, { admissionsDelayed: 0, admissionsRefused: 0 });
  t.ok(r.stats.tokensRecomputedByCause.trap > 0, "the resumes re-evaluated what the traps dropped");
  t.equal(r.stats.tokensRecomputedByCause.eviction, 0);
});

t.test("a request given a paused session's sequence still forks the prefix another sequence holds", async (t) => {
  const { engine } = await startEngine(t, { sequences: 2, kvRetention: "lru", prefixCache: true });
  const system = "You are the team's build agent. ".repeat(12);
  const paused = (name: string): EngineSession =>
    engine.createSession({
      system,
      prompt: `paused ${name}`,
      tools,
      kvPolicy: "keep",
      policy: { type: "lpt-dag", calls: [{ id: "w", tool: "wait", arguments: { ms: 1500 }, dependsOn: [] }], finalText: " ok" },
    });
  const a = paused("a");
  await trapped(a);
  const b = paused("b");
  await trapped(b);
  const forks = engine.stats().prefixForks;
  const c = engine.createSession({ system, prompt: "a newcomer with the same system prompt", tools, maxTokens: 8 });
  t.equal((await c.finished).reason, "max_tokens", "admitted into the oldest pause's sequence");
  t.equal(engine.stats().prefixForks, forks + 1, "its shared prefix was copied from the other paused session's cells, not prefilled again");
  t.equal(engine.stats().retention?.admissionsDelayed, 1);
  for (const s of [a, b]) t.equal((await s.finished).reason, "eos");
});

t.test("a retention hint out of range is refused with the field named", async (t) => {
  const { engine } = await startEngine(t, { sequences: 1 });
  for (const retention of [{ expectedToolMs: -1 }, { retentionSeconds: 1e9 }, { other: 1 } as unknown as CreateSessionRequest["retention"]]) {
    t.throws(() => engine.createSession({ prompt: "x", tools, retention: retention! }), { code: ErrorCode.BadRequest, message: /retention/ });
  }
});
