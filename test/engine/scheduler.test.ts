/**
 * @module The scheduler (pure): one step's plan as plain data from plain
 * session views — cancels, resumes by priority into granted slots, sync
 * re-entries, the compaction move, and the batch in sequence-id order with
 * long fills chunked — and admission (prefix-cache slot, a prefix to fork
 * from another sequence, priority over paused sessions waiting for a slot),
 * and a latency-critical session's batch cap.
 */
import t from "tap";
import type { Token } from "node-llama-cpp";
import { Scheduler, type SessionView } from "../../engine-pod/src/scheduler/index.js";

const tk = (...xs: number[]): Token[] => xs as Token[];

function view(id: string, over: Partial<SessionView>): SessionView {
  return { id, state: "active", slot: 0, feed: 1, queued: 0, outstanding: 0, cancelRequested: false, priority: 0, decodedTokens: 0, maxTokens: 1000, ...over };
}

function scheduler(sequences: number, prefillChunk = 8, compaction = true): Scheduler {
  return new Scheduler({ sequences, prefillChunk, compaction, minForkTokens: 2 });
}

t.test("the batch: active sessions in sequence-id order; long fills advance one chunk", async (t) => {
  const s = scheduler(4);
  for (let i = 0; i < 3; i++) s.admit(tk(), 0, []);
  const plan = s.plan([view("c", { slot: 2 }), view("a", { slot: 0, feed: 30 }), view("b", { slot: 1, state: "busy" })]);
  t.same(plan.batch, [
    { id: "a", slot: 0, kind: "prefill", tokens: 8 },
    { id: "c", slot: 2, kind: "decode", tokens: 1 },
  ]);
  t.same([plan.cancel, plan.resume, plan.reenter, plan.move], [[], [], [], null]);
  t.same(JSON.parse(JSON.stringify(plan)), plan, "the plan survives JSON: no class instances");
});

t.test("cancels, re-entries and resumes come out of the batch; resumes by priority get the free slots", async (t) => {
  const s = scheduler(3);
  for (let i = 0; i < 3; i++) s.admit(tk(), 0, []);
  s.release(1); // lent out by a paused session
  s.release(2); // lent out by another
  const plan = s.plan([
    view("x", { slot: 0, cancelRequested: true }),
    view("low", { state: "trapped", slot: -1, queued: 1, priority: 0 }),
    view("high", { state: "trapped", slot: -1, queued: 1, priority: 5 }),
    view("w", { state: "waiting", slot: 0, queued: 1, outstanding: 0 }),
    view("w2", { state: "waiting", slot: 0, queued: 1, outstanding: 1 }),
  ]);
  t.same(plan.cancel, ["x"]);
  t.same(plan.reenter, ["w"], "only once every result of the turn is in");
  t.same(plan.resume, [
    { id: "high", slot: 1, granted: true },
    { id: "low", slot: 2, granted: true },
  ], "higher priority first");
  t.same(plan.batch, []);
  t.equal(s.available, 0);
});

t.test("a paused session that kept its slot resumes in place; with no slot free it waits", async (t) => {
  const s = scheduler(2);
  s.admit(tk(), 0, []);
  s.admit(tk(), 0, []);
  const views = [view("kept", { state: "trapped", slot: 0, queued: 1 }), view("lent", { state: "trapped", slot: -1, queued: 1 })];
  const plan = s.plan(views);
  t.same(plan.resume, [{ id: "kept", slot: 0, granted: false }]);
  t.equal(s.queued(views), 1, "the lent-out one is queued for a slot");
});

t.test("compaction: the highest busy session moves into a gap below it", async (t) => {
  const s = scheduler(3);
  for (let i = 0; i < 3; i++) s.admit(tk(), 0, []);
  s.release(1);
  const plan = s.plan([view("a", { slot: 0 }), view("c", { slot: 2 })]);
  t.same(plan.move, { id: "c", from: 2, to: 1 });
  t.same(plan.batch.map((b) => b.id), ["a"], "the moving session sits this step out");
  t.equal(s.available, 0, "the target slot is claimed");
  const off = scheduler(3, 8, false);
  for (let i = 0; i < 3; i++) off.admit(tk(), 0, []);
  off.release(1);
  t.equal(off.plan([view("a", { slot: 0 }), view("c", { slot: 2 })]).move, null, "off when disabled");
  const near = scheduler(3);
  for (let i = 0; i < 3; i++) near.admit(tk(), 0, []);
  near.release(1);
  t.equal(near.plan([view("a", { slot: 0 }), view("c", { slot: 2, decodedTokens: 995 })]).move, null, "not worth moving a session about to end");
});

t.test("admission: prefix-cache slot, or a longer prefix forked from another sequence", async (t) => {
  const s = scheduler(3);
  s.admit(tk(), 0, []); // slot 0, live
  s.admit(tk(), 0, []); // slot 1
  s.release(1, tk(1, 2)); // idle cache holding [1, 2]
  const resident = [tk(1, 2, 3, 4, 5, 6), tk(1, 2), tk()];
  const a = s.admit(tk(1, 2, 3, 4, 5, 9), 0, [], { resident });
  t.same(a, { slot: 1, reusePrefix: 2, fork: { from: 0, tokens: 5, filling: false } }, "the idle slot, and the rest of the prefix copied from sequence 0");
  const b = s.admit(tk(1, 2, 3, 4, 5, 6), 0, [], { resident });
  t.same(b, { slot: 2, reusePrefix: 0, fork: { from: 0, tokens: 5, filling: false } }, "one prompt token is always left to evaluate");
  t.equal(s.admit(tk(7), 0, [], { resident }), null, "full");
  const c = scheduler(2);
  t.same(c.admit(tk(1, 2, 3), 0, []), { slot: 0, reusePrefix: 0, fork: null }, "no reuse wanted: no fork");
});

t.test("admission: a prefix a live session is still prefilling is followed when it saves enough over what is resident", async (t) => {
  const s = scheduler(4);
  s.admit(tk(), 0, []); // slot 0: filling the prompt [1..6, 7]
  s.admit(tk(), 0, []); // slot 1: holds [1, 2, 3]
  const filling = [tk(1, 2, 3, 4, 5, 6, 7)];
  const resident = [tk(1), tk(1, 2, 3), tk(), tk()];
  t.same(
    s.admit(tk(1, 2, 3, 4, 5, 6, 9), 0, [], { resident, filling }),
    { slot: 2, reusePrefix: 0, fork: { from: 0, tokens: 6, filling: true } },
    "the fill that will hold 6 shared tokens, over the 3 resident in sequence 1",
  );
  t.same(
    s.admit(tk(1, 2, 3, 4, 8), 0, [], { resident, filling }),
    { slot: 3, reusePrefix: 0, fork: { from: 1, tokens: 3, filling: false } },
    "a fill that saves one token more than what is resident is not waited for",
  );
  const none = scheduler(2);
  none.admit(tk(), 0, []);
  t.same(none.admit(tk(5, 6, 7), 0, [], { resident: [tk(), tk()], filling }), { slot: 1, reusePrefix: 0, fork: null }, "an unrelated fill is not followed");
});

t.test("admission order: a paused session waiting for a slot comes first unless the newcomer has higher priority", async (t) => {
  const s = scheduler(2);
  const waiting = [view("p", { state: "trapped", slot: -1, queued: 1, priority: 1 })];
  t.equal(s.admit(tk(), 0, waiting), null, "lower priority waits");
  t.equal(s.admit(tk(), 1, waiting), null, "equal priority waits");
  t.same(s.admit(tk(), 2, waiting), { slot: 0, reusePrefix: 0, fork: null }, "higher priority is admitted");
  const kept = [view("k", { state: "trapped", slot: 1, queued: 1, priority: 9 })];
  t.not(s.admit(tk(), 0, kept), null, "a paused session that kept its slot needs none");
});

t.test("a latency-critical session's batch cap: it always runs, others fill the places by priority, the rest wait a step", async (t) => {
  const s = scheduler(6);
  for (let i = 0; i < 6; i++) s.admit(tk(), 0, []);
  const ids = (views: SessionView[]): string[] => s.plan(views).batch.map((b) => b.id);
  const throughput = ["a", "b", "c", "d"].map((id, i) => view(id, { slot: i, priority: i === 2 ? 1 : 0 }));
  t.same(ids(throughput), ["a", "b", "c", "d"], "no cap: every active session");
  const latency = view("l", { slot: 5, priority: 2, maxBatch: 3 });
  t.same(ids([...throughput, latency]), ["a", "c", "l"], "cap 3: the latency session, then the task group (priority 1), then admission order; in sequence-id order");
  const second = view("m", { slot: 4, priority: 2, maxBatch: 1 });
  t.same(ids([...throughput, latency, second]), ["m", "l"], "capped sessions never wait for each other; the smallest cap holds");
  t.same(ids([view("x", { slot: 0, state: "trapped" }), latency]), ["l"], "only active sessions count");
});

t.test("needsAttention", async (t) => {
  const s = scheduler(1);
  t.equal(s.needsAttention([]), false);
  t.equal(s.needsAttention([view("a", {})]), true, "an active session");
  t.equal(s.needsAttention([view("a", { state: "trapped", queued: 0 })]), false, "paused, nothing arrived");
  t.equal(s.needsAttention([view("a", { state: "trapped", slot: -1, queued: 1 })]), true, "its interrupt arrived and a slot is free");
  t.equal(s.needsAttention([view("a", { state: "busy", cancelRequested: true })]), false, "a cancel waits for the KV operation");
});
