/**
 * The turn policies as pure functions: each reads a plain view and returns
 * decisions. Recorded token streams (model output as its text pieces, one per
 * token, with CML markers spelled as text) go through the real CML monitor
 * and call parser; a small replay applies the decisions the way the engine
 * core does (counts only), so each mode's reaction to the same stream is
 * compared side by side. No engine, no model.
 */
import t from "tap";
import type { ToolSpec } from "../../common/src/index.js";
import { createTokenMonitor, parseCallBody } from "../../engine-pod/src/cml/index.js";
import {
  ASYNC_POLICY,
  completionPolicy,
  SYNC_PARALLEL_POLICY,
  SYNC_POLICY,
  sessionTurnPolicy,
  type TurnDecision,
  type TurnPolicy,
  type TurnView,
} from "../../engine-pod/src/engine/turn/index.js";

const TOOLS: ToolSpec[] = [
  { name: "wait", description: "sleeps", parameters: { type: "object", properties: { ms: { type: "integer" } }, required: ["ms"] } },
];

/** A recorded stream: token texts, `EOS`, and `{ results: n }` (n outstanding results arrive before the next token). */
type Step = string | typeof EOS | { results: number };
const EOS = Symbol("eos");

const VIEW: TurnView = { turnCalls: 0, held: [], queued: 0, outstanding: 0, scripted: false, expectsUserInterrupt: false };
const view = (over: Partial<TurnView> = {}): TurnView => ({ ...VIEW, ...over });

/** What the replay saw: every decision in order, as short strings, and why it stopped. */
function replay(policy: TurnPolicy, stream: readonly Step[]): { log: string[]; fed: string } {
  const monitor = createTokenMonitor({ textMarkers: true });
  const state = { turnCalls: 0, held: [] as { id: string; tool: string; arguments: Record<string, unknown> }[], queued: 0, outstanding: 0 };
  const log: string[] = [];
  let fed = "";
  let stopped = false;
  let n = 0;
  const current = (): TurnView => view({ turnCalls: state.turnCalls, held: state.held.slice(), queued: state.queued, outstanding: state.outstanding });
  const apply = (decisions: readonly TurnDecision[]): void => {
    for (const d of decisions) {
      if (stopped) return;
      switch (d.type) {
        case "dispatch":
          state.held = state.held.filter((c) => c !== d.call);
          state.outstanding++;
          log.push(`dispatch ${d.call.id}`);
          break;
        case "hold":
          state.held.push(d.call);
          log.push(`hold ${d.call.id}`);
          break;
        case "error":
          state.queued++;
          log.push(`error ${d.id} ${d.failure.code}`);
          break;
        case "endTurn":
          state.turnCalls = 0;
          log.push(d.dropPending ? "endTurn (drop pending)" : "endTurn");
          break;
        case "inject":
          log.push(`inject ${state.queued}`);
          state.queued = 0;
          break;
        case "wait":
        case "trap":
          log.push(d.type);
          stopped = true;
          break;
        case "finish":
          log.push(`finish ${d.reason}${d.finishReason !== undefined ? ` ${d.finishReason}` : ""}`);
          stopped = true;
          break;
      }
    }
  };
  for (const step of stream) {
    if (stopped) break;
    if (step === EOS) {
      apply(policy.onEos(current()));
      break;
    }
    if (typeof step === "object") {
      state.outstanding -= step.results;
      state.queued += step.results;
      continue;
    }
    const wasCritical = monitor.inCriticalSection;
    const events = monitor.push(-1, step);
    const at = policy.atToken(current(), wasCritical, events);
    if (at.length > 0) {
      apply(at);
      continue;
    }
    fed += step;
    for (const e of events) {
      if (e.type === "call") {
        state.turnCalls++;
        const id = `c${++n}`;
        const parsed = parseCallBody(e.body, TOOLS);
        apply(parsed.ok ? policy.onCall(current(), { id, tool: parsed.tool, arguments: parsed.arguments }) : policy.onCallError(current(), id, { code: parsed.code, message: parsed.message }));
      } else if (e.type === "trap") apply(policy.onTrap(current()));
    }
    if (!stopped && state.queued > 0) apply(policy.deliver(current()));
  }
  return { log, fed };
}

/** Two calls (one valid, one not), then text, then EOS: the model's output as it streamed, token by token. */
const TWO_CALLS: Step[] = [
  "Let", " me", " check", ".",
  "[CALL]", '{"name": "wait", ', '"arguments": {"ms": 5}}', "[END]",
  "[CALL]", '{"name": "wait", ', '"arguments": {"ms": "soon"}}', "[END]",
  " Now", " the", " answer", ".",
  EOS,
];

t.test("one recorded stream, every mode's decisions side by side", async (t) => {
  t.same(replay(ASYNC_POLICY, TWO_CALLS).log, ["dispatch c1", "error c2 invalid_arguments", "inject 1", "trap"], "async: dispatch at once, the error read in place, EOS with a call outstanding traps");
  t.same(replay(SYNC_POLICY, TWO_CALLS).log, ["dispatch c1", "wait"], "sync: the first call stops the turn");
  t.same(
    replay(SYNC_PARALLEL_POLICY, TWO_CALLS).log,
    ["hold c1", "error c2 invalid_arguments", "endTurn (drop pending)", "dispatch c1", "wait"],
    "syncParallel: calls held until the text after them ends the turn, then run together",
  );
  t.same(replay(completionPolicy("turn"), TWO_CALLS).log, ["hold c1", "finish eos tool_calls"], "completion: calls held as tool_calls, the turn's end finishes it");
  t.same(replay(completionPolicy("never"), TWO_CALLS).log, ["hold c1", "finish eos stop"], "raw completion: goes on to EOS");
  t.equal(replay(SYNC_PARALLEL_POLICY, TWO_CALLS).fed.endsWith("[END]"), true, "the token that ends a turn is not fed");
});

t.test("a trap block and results arriving", async (t) => {
  const stream: Step[] = ["[CALL]", '{"name": "wait", "arguments": {"ms": 9}}', "[END]", "[TRAP]", "[END]", { results: 1 }, " ok", EOS];
  t.same(replay(ASYNC_POLICY, stream).log, ["dispatch c1", "trap"], "async: [TRAP][END] with a call outstanding pauses");
  t.same(replay(SYNC_PARALLEL_POLICY, stream).log, ["hold c1", "endTurn", "dispatch c1", "wait"], "syncParallel: the trap ends the turn, keeping its [END]");
  t.same(replay(completionPolicy("never"), stream).log, ["hold c1", "finish eos trap"], "raw completion: the trap ends it");
  const arrived: Step[] = ["[CALL]", '{"name": "wait", "arguments": {"ms": 9}}', "[END]", { results: 1 }, " and", EOS];
  t.same(replay(ASYNC_POLICY, arrived).log, ["dispatch c1", "inject 1", "finish eos"], "async: a result that arrived is injected at the next token");
});

t.test("hooks on edge views", async (t) => {
  const call = { id: "k", tool: "wait", arguments: { ms: 1 } };
  t.same(ASYNC_POLICY.onTrap(view({ queued: 1 })), [], "async trap with results queued: no pause, they are injected next");
  t.same(ASYNC_POLICY.onTrap(view()), [{ type: "finish", reason: "eos" }], "async trap with nothing outstanding ends the turn");
  t.same(ASYNC_POLICY.onTrap(view({ expectsUserInterrupt: true })), [{ type: "trap" }], "unless a script expects a user interrupt");
  t.same(ASYNC_POLICY.onEos(view({ queued: 2 })), [{ type: "inject" }]);
  t.same(SYNC_POLICY.onEos(view({ queued: 2 })), [{ type: "wait" }], "sync reads what arrived by re-entry");
  t.same(SYNC_POLICY.onTrap(view({ outstanding: 1 })), [{ type: "wait" }]);
  t.same(SYNC_POLICY.onTrap(view()), [{ type: "finish", reason: "eos" }]);
  t.same(SYNC_PARALLEL_POLICY.onMaxTokens(view()), [{ type: "finish", reason: "max_tokens" }]);
  t.same(
    SYNC_PARALLEL_POLICY.onMaxTokens(view({ turnCalls: 1, held: [call] })),
    [{ type: "endTurn", dropPending: false }, { type: "dispatch", call }, { type: "wait" }],
    "the token limit ends a turn with calls: they still run",
  );
  t.same(SYNC_PARALLEL_POLICY.onEos(view({ turnCalls: 1 })), [{ type: "endTurn", dropPending: true }, { type: "finish", reason: "eos" }], "a turn whose only call was refused, nothing queued: done");
  t.same(SYNC_PARALLEL_POLICY.atToken(view({ turnCalls: 1, scripted: true }), false, [{ type: "text", text: " x" }]), [], "a script writes its own turns");
  t.same(completionPolicy("turn").onEos(view()), [{ type: "finish", reason: "eos", finishReason: "stop" }]);
  t.same(completionPolicy("turn").onTrap(view()), [], "a trap with no call in the turn: the completion goes on");
  for (const p of [ASYNC_POLICY, SYNC_POLICY, SYNC_PARALLEL_POLICY, completionPolicy("turn")]) {
    const v = view({ held: [call] });
    p.onCall(v, call);
    p.atToken(v, false, [{ type: "text", text: " x" }]);
    t.same(v, view({ held: [call] }), "a policy never changes its view");
  }
});

t.test("the mode table", async (t) => {
  t.equal(sessionTurnPolicy("async"), ASYNC_POLICY);
  t.equal(sessionTurnPolicy("syncParallel"), SYNC_PARALLEL_POLICY);
  t.throws(() => sessionTurnPolicy("asyncNaive"), /--backend openai/);
  t.throws(() => sessionTurnPolicy("later" as never), /unknown mode "later"/);
});
