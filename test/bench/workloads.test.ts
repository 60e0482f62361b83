import t from "tap";
import { turnDependencies, buildParallelTasks, buildMultistepTasks } from "../../bench/bfcl/workloads.js";
import type { BfclEntry, MultiTurnEntry } from "../../bench/bfcl/bfcl-reader.js";

const call = (tool: string, args: Record<string, unknown> = {}) => ({ tool, arguments: args });

t.test("calls in a turn form a chain; a run of one tool fans out", async (t) => {
  // cd → mkdir → mv: a chain.
  t.same(turnDependencies([call("cd"), call("mkdir"), call("mv")]), [[], ["0"], ["1"]]);
  // cd → get(A), get(B) → total: the two gets are independent; total waits for both.
  t.same(turnDependencies([call("cd"), call("get", { s: "A" }), call("get", { s: "B" }), call("total")]), [[], ["0"], ["0"], ["1", "2"]]);
});

const multi = (id: string, firstTurn: string[]): MultiTurnEntry => ({
  kind: "multi",
  id,
  turns: [`do ${id}`, "later"],
  tools: firstTurn.map((name) => ({ name, description: name, parameters: { type: "object" } })),
  callsByTurn: [firstTurn.map((n) => call(n)), [call("x")]],
});

const entries: BfclEntry[] = [
  { kind: "single", id: "parallel_0", messages: [{ role: "user", content: "two songs" }], tools: [{ name: "play", description: "", parameters: {} }], calls: [call("play", { a: 1 }), call("play", { a: 2 })], possible: [{ tool: "play", params: { a: [1] } }, { tool: "play", params: { a: [2] } }] },
  multi("mt0", ["cd", "mv"]),
  multi("mt1", ["ls"]),
  multi("mt2", ["a", "b", "c"]),
  multi("mt3", []),
];

t.test("parallel tasks: independent calls with seeded durations", async (t) => {
  const [task] = buildParallelTasks(entries, { seed: 1 });
  t.ok(task);
  t.same(task!.calls.map((c) => c.dependsOn), [[], []]);
  t.same(buildParallelTasks(entries, { seed: 1 }), buildParallelTasks(entries, { seed: 1 }), "same seed, same tasks");
  t.ok(task!.calls.every((c) => c.latencyMs === c.estimatedLatencyMs && c.latencyMs >= 30));
});

t.test("multistep: three chains from three different entries; entries without first-turn calls are skipped", async (t) => {
  const [task] = buildMultistepTasks(entries, { seed: 3, userInterrupts: false });
  t.ok(task);
  t.equal(task!.calls.length, 6);
  t.same(new Set(task!.sources), new Set(["mt0", "mt1", "mt2"]));
  const roots = task!.calls.filter((c) => c.dependsOn.length === 0);
  t.equal(roots.length, 3, "one root per chain");
  t.equal(task!.userInterrupts.length, 0);
});

t.test("interrupts: chains 2 and 3 arrive at 200 and 400 ms, with the same durations", async (t) => {
  const [plain] = buildMultistepTasks(entries, { seed: 3, userInterrupts: false });
  const [withIntr] = buildMultistepTasks(entries, { seed: 3, userInterrupts: true });
  t.same(withIntr!.userInterrupts.map((u) => u.atMs), [200, 400]);
  t.same(withIntr!.calls.map((c) => c.latencyMs), plain!.calls.map((c) => c.latencyMs));
  const released = new Set(withIntr!.userInterrupts.flatMap((u) => u.callIds));
  t.equal(released.size + withIntr!.calls.filter((c) => c.id.includes("_k0c")).length, withIntr!.calls.length);
});
