/**
 * @module A trapped session paused with swap or recompute holds no sequence:
 * its slot is lent to other sessions and it resumes into whichever slot is
 * free when its result arrives, continuing exactly as if it had never paused.
 * With keep it holds its slot, and (under the `pin` retention policy, which
 * never takes cells from a paused session) the engine is full; the other
 * policies are engine-kv-retention.test.ts's.
 */
import t from "tap";
import { ErrorCode, type CreateSessionRequest, type KvPolicy } from "../../common/src/index.js";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventsOf, sequenceOf, startEngine, TOOLS } from "./engine-fixture.js";

// The engine keeps its swap files in a directory of its own under this root.
const swapRoot = mkdtempSync(join(tmpdir(), "trap-lending-"));
t.teardown(() => rmSync(swapRoot, { recursive: true, force: true }));
const { engine, runtime } = await startEngine(t, { sequences: 1, swapDir: swapRoot, kvRetention: "pin" });

/** State files the engine holds in its swap directory now. */
function swapFiles(): number {
  return readdirSync(swapRoot).reduce((n, dir) => n + readdirSync(join(swapRoot, dir)).length, 0);
}

const policy: CreateSessionRequest["policy"] = {
  type: "lpt-dag",
  calls: [{ id: "w", tool: "wait", arguments: { ms: 400 }, dependsOn: [], estimatedLatencyMs: 400 }],
  finalText: " and that is the whole story of the call we made",
};

async function trapped(s: { events: readonly { type: string }[]; subscribe(l: (e: { type: string }) => void): () => void }): Promise<void> {
  if (s.events.some((e) => e.type === "trap")) return;
  await new Promise<void>((resolve) => {
    const off = s.subscribe((e) => {
      if (e.type === "trap") (off(), resolve());
    });
  });
}

const tails: Record<string, number[]> = {};

for (const kvPolicy of ["keep", "swap", "recompute"] as KvPolicy[]) {
  t.test(`${kvPolicy}: the slot while trapped`, async (t) => {
    const a = engine.createSession({ prompt: "pause and lend", tools: TOOLS, policy, kvPolicy, prefixReuse: false });
    await trapped(a);
    if (kvPolicy !== "keep") {
      // The pause runs in the background after the trap event; it ends by lending the slot.
      while (sequenceOf(runtime, a) !== undefined) await new Promise((r) => setImmediate(r));
    }
    let other: string | undefined;
    try {
      const b = engine.createSession({ prompt: "borrower", tools: TOOLS, maxTokens: 10, prefixReuse: false });
      const doneB = await b.finished;
      other = doneB.reason;
    } catch (err) {
      other = (err as { code?: string }).code;
    }
    if (kvPolicy === "keep") t.equal(other, ErrorCode.Capacity, "keep holds the only slot: the engine is full");
    else t.equal(other, "max_tokens", "the lent slot served another session to completion meanwhile");
    const done = await a.finished;
    t.equal(done.reason, "eos");
    t.equal(eventsOf(a.events, "trap")[0]?.decision, kvPolicy);
    t.equal(eventsOf(a.events, "resume")[0]?.decision, kvPolicy);
    tails[kvPolicy] = a.inspect().tokens.sampled.slice(-40);
  });
}

t.test("after lending, the continuation is the same as if the sequence had never paused", async (t) => {
  t.same(tails["swap"], tails["keep"], "swap");
  t.same(tails["recompute"], tails["keep"], "recompute");
});

t.test("cancelling a swapped-out session drops its state file and frees everything", async (t) => {
  const a = engine.createSession({ prompt: "cancel while paused", tools: TOOLS, policy, kvPolicy: "swap", prefixReuse: false });
  await trapped(a);
  while (sequenceOf(runtime, a) !== undefined) await new Promise((r) => setImmediate(r));
  t.equal(swapFiles(), 1, "one state file while paused");
  engine.cancel(a.id);
  const done = await a.finished;
  t.equal(done.reason, "cancelled");
  t.equal(swapFiles(), 0, "the state file is gone");
  t.equal(engine.stats().activeSessions, 0);
  t.equal(engine.stats().kvCellsUsed, 0, "no cells in use");
});

t.test("a paused state is restored ahead of its expected interrupt", async (t) => {
  // The tool says 150 ms but takes 700: the restore is due long before the result arrives.
  const tools = TOOLS.map((x) => (x.name === "wait" ? { ...x, estimatedLatencyMs: 150 } : x));
  const slow: CreateSessionRequest["policy"] = { type: "lpt-dag", calls: [{ id: "w", tool: "wait", arguments: { ms: 700 }, dependsOn: [] }] };
  const a = engine.createSession({ prompt: "prefetch", tools, policy: slow, kvPolicy: "swap", prefixReuse: false });
  await trapped(a);
  let lent = false;
  let restoredEarly = false;
  while (eventsOf(a.events, "interrupt").length === 0 && a.events.every((e) => e.type !== "done")) {
    const seq = sequenceOf(runtime, a);
    if (seq === undefined) lent = true;
    else if (lent && eventsOf(a.events, "interrupt").length === 0) restoredEarly = true;
    await new Promise((r) => setTimeout(r, 5));
  }
  const done = await a.finished;
  t.equal(done.reason, "eos");
  t.ok(lent, "the slot was lent while paused");
  t.ok(restoredEarly, "the state was back in a sequence before the result arrived");
  t.equal(eventsOf(a.events, "resume")[0]?.decision, "swap");
});
