/**
 * The program state machine without engines (its dispatcher records what it
 * is handed, as the executor would run it): an open program runs nothing
 * until a final output is named, then exactly what that output needs, with
 * the objectives deduced over the DAG known by then; closing runs the rest;
 * cancelling fails every pending value with `cancelled`, aborts the signal
 * the executor's requests carry, and ends the program; deduction off makes
 * every request latency.
 */
import t from "tap";
import type { SemanticFunction } from "../../common/src/semantic-function.js";
import { deduceObjectives, latencyOnly } from "../../router/src/programs/dag.js";
import { extendProgram, parseProgram } from "../../router/src/programs/program-request.js";
import { ProgramRun, type ProgramEvent, type ReadyCall } from "../../router/src/programs/program-run.js";
import { appConfig } from "./fixtures.js";

const fns: SemanticFunction[] = [
  { name: "summarize", template: "Part: {{input:chunk}}\nSummary: {{output:summary}}", outputs: [{ name: "summary", maxTokens: 4, temperature: 0 }], tools: false },
  { name: "combine", template: "{{input:parts}}\nAll: {{output:all}}", outputs: [{ name: "all", maxTokens: 4, temperature: 0 }], tools: false },
];
const app = appConfig("r", { semanticFunctions: fns });
const limits = { maxValueBytes: 1000, maxCalls: 20 };

function recorder(): { dispatched: ReadyCall[][]; dispatch(run: ProgramRun, calls: readonly ReadyCall[]): void } {
  const dispatched: ReadyCall[][] = [];
  return { dispatched, dispatch: (_run, calls) => void dispatched.push([...calls]) };
}

function openRun(dispatcher = recorder()): { run: ProgramRun; dispatcher: ReturnType<typeof recorder>; events: ProgramEvent[] } {
  const program = parseProgram(app, { open: true, inputs: { c0: "a", c1: "b", c2: "c" } }, limits);
  const run = new ProgramRun("router-0~000000000001", app, program, dispatcher, "alice", deduceObjectives);
  const events: ProgramEvent[] = [];
  run.subscribe((e) => events.push(e));
  run.start();
  // Calls arrive one at a time, as a client makes them.
  for (let i = 0; i < 3; i++) run.extend(extendProgram(app, run.program, { calls: [{ id: `map${i}`, function: "summarize", inputs: { chunk: `c${i}` }, outputs: { summary: `s${i}` } }] }, limits));
  run.extend(extendProgram(app, run.program, { calls: [{ id: "reduce", function: "combine", inputs: { parts: ["s0", "s1", "s2"] }, outputs: { all: "final" } }] }, limits));
  return { run, dispatcher, events };
}

t.test("open: nothing runs until a get names a final; then its upstream, deduced over the whole DAG", async (t) => {
  const { run, dispatcher } = openRun();
  t.same(dispatcher.dispatched, [], "submitted calls wait");
  t.equal(run.state, "open");
  run.setCriterion("final", "latency");
  t.equal(dispatcher.dispatched.length, 1);
  t.same(
    dispatcher.dispatched[0]!.map((c) => [c.call.id, c.deduced.objective, c.deduced.groupSize]),
    [
      ["map0", "task-group", 3],
      ["map1", "task-group", 3],
      ["map2", "task-group", 3],
    ],
    "the maps arrive together as one task group",
  );
  for (const c of dispatcher.dispatched[0]!) run.produced(c.call, "summary", `sum of ${c.call.id}`);
  t.same(dispatcher.dispatched[1]!.map((c) => [c.call.id, c.deduced.objective]), [["reduce", "latency"]]);
  run.produced(dispatcher.dispatched[1]![0]!.call, "all", "done");
  t.equal(run.done, false, "an open program is not done: more calls may come");
  run.extend(extendProgram(app, run.program, { close: true }, limits));
  t.equal(run.state, "succeeded", "closed with every value produced");
});

t.test("open: a get on a map runs only that map; closing runs the rest", async (t) => {
  const { run, dispatcher } = openRun();
  run.setCriterion("s1", "throughput");
  t.same(dispatcher.dispatched.flat().map((c) => [c.call.id, c.deduced.objective]), [["map1", "throughput"]]);
  run.extend(extendProgram(app, run.program, { close: true }, limits));
  t.same(
    dispatcher.dispatched.slice(1).flat().map((c) => c.call.id),
    ["map0", "map2"],
    "the rest once closed (the reduce waits for its inputs)",
  );
});

t.test("cancel: pending values fail with cancelled, the signal aborts, the program ends", async (t) => {
  const { run, dispatcher, events } = openRun();
  run.setCriterion("final", "latency");
  const running = dispatcher.dispatched[0]!;
  run.produced(running[0]!.call, "summary", "first");
  t.equal(run.signal.aborted, false);
  t.equal(run.cancel("by its client"), true);
  t.equal(run.signal.aborted, true, "the executor's requests see the abort");
  t.equal(run.state, "cancelled");
  t.same(
    events.filter((e) => e.type === "failed").map((e) => [e.variable, e.type === "failed" && e.error.code, e.type === "failed" && e.error.call]),
    [
      ["s1", "cancelled", "map1"],
      ["s2", "cancelled", "map2"],
      ["final", "cancelled", "reduce"],
    ],
    "each pending value names the call that would have produced it",
  );
  t.match(events.at(-1), { type: "done", state: "cancelled", failed: ["s1", "s2", "final"] });
  t.equal(run.variables.get("s0")?.state, "ready", "what was produced stays");
  t.same([...run.calls.values()], ["done", "cancelled", "cancelled", "cancelled"]);
  // A call in flight that then fails or produces changes nothing.
  run.failed(running[1]!.call, "engine_error", "late");
  run.produced(running[2]!.call, "summary", "late");
  t.equal(run.variables.get("s2")?.state, "failed");
  t.equal(run.cancel("again"), false, "cancelling an ended program is a no-op");
  t.equal(events.filter((e) => e.type === "done").length, 1);
});

t.test("deduction off: every request is latency on its own", async (t) => {
  const calls = [
    { function: "summarize", inputs: { chunk: "c0" }, outputs: { summary: "s0" } },
    { function: "summarize", inputs: { chunk: "c1" }, outputs: { summary: "s1" } },
    { function: "combine", inputs: { parts: ["s0", "s1"] } },
  ];
  const program = parseProgram(app, { inputs: { c0: "a", c1: "b" }, calls }, limits);
  const dispatcher = recorder();
  const run = new ProgramRun("router-0~000000000002", app, program, dispatcher, "alice", (dag) => latencyOnly(dag));
  run.start();
  t.same(dispatcher.dispatched[0]!.map((c) => c.deduced.objective), ["latency", "latency"]);
  t.same(run.objectives(), { latency: 3, "task-group": 0, throughput: 0 });
});
