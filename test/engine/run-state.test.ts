/**
 * @module The run-state table (pure): every session run-state change goes
 * through `checkedMove`; the moves the engine makes are legal, everything
 * else throws, and `done` is final.
 */
import t from "tap";
import { checkedMove, IllegalTransitionError, isLegalMove, RUN_STATE_MOVES, type RunState } from "../../engine-pod/src/engine/index.js";

const STATES = Object.keys(RUN_STATE_MOVES) as RunState[];

t.test("the engine's moves are legal", async (t) => {
  const lifecycle: [RunState, RunState][] = [
    ["filling", "busy"], // admission: the fill runs in the background
    ["busy", "active"], // fill done
    ["active", "trapped"], // trap
    ["trapped", "busy"], // pause, resume or prefetch
    ["busy", "trapped"], // paused
    ["active", "waiting"], // sync: stop at a call
    ["waiting", "busy"], // re-entry
    ["active", "busy"], // compaction move
    ["busy", "done"], // a KV operation failed, or re-entry past maxTokens
    ["active", "done"],
    ["trapped", "done"], // cancelled while paused
    ["waiting", "done"],
  ];
  for (const [from, to] of lifecycle) t.equal(checkedMove(from, to), to, `${from} → ${to}`);
  t.equal(checkedMove("waiting", "waiting"), "waiting", "a move to the current state is a no-op");
});

t.test("illegal moves throw, with both states in the error", async (t) => {
  const illegal: [RunState, RunState][] = [
    ["done", "active"],
    ["done", "done"],
    ["trapped", "active"], // a resume always restores in the background first
    ["waiting", "active"],
    ["trapped", "waiting"],
    ["filling", "active"],
  ];
  for (const [from, to] of illegal) {
    t.throws(() => checkedMove(from, to), { name: "IllegalTransitionError", from, to, code: "illegal_transition" }, `${from} → ${to}`);
  }
  const err = (() => {
    try {
      checkedMove("done", "busy");
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  t.ok(err instanceof IllegalTransitionError);
});

t.test("the table and the predicate agree on every pair; done is final", async (t) => {
  for (const from of STATES) {
    for (const to of STATES) {
      const legal = from === to ? from !== "done" : RUN_STATE_MOVES[from].includes(to);
      t.equal(isLegalMove(from, to), legal, `${from} → ${to}`);
    }
  }
  t.same(RUN_STATE_MOVES.done, []);
});
