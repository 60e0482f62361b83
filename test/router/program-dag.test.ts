/**
 * The program DAG and Parrot §5.2 objective deduction on hand-worked graphs:
 * a chain, a map-reduce, Parrot's Figure 7 (WritePythonCode → WriteTestCode),
 * the §8.4 multi-agent shape, throughput outputs, cycles and unknown
 * variables.
 */
import t from "tap";
import { buildDag, deduceObjectives, describeDagError, type DagCall, type Dag } from "../../router/src/programs/dag.js";

function dag(calls: DagCall[], given: string[]): Dag {
  const r = buildDag(calls, new Set(given));
  if (!r.ok) throw new Error(describeDagError(r.error));
  return r.dag;
}

function objectives(d: Dag, finals: Record<string, "latency" | "throughput">): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [id, x] of deduceObjectives(d, new Map(Object.entries(finals)))) out[id] = x.group !== undefined ? `${x.objective}:${x.group}/${x.groupSize}` : x.objective;
  return out;
}

t.test("chain: every request is on the critical path", async (t) => {
  const d = dag(
    [
      { id: "c3", inputs: ["s2"], outputs: ["s3"] },
      { id: "c1", inputs: ["doc"], outputs: ["s1"] },
      { id: "c2", inputs: ["s1", "doc"], outputs: ["s2"] },
    ],
    ["doc"],
  );
  t.same(d.order, ["c1", "c2", "c3"], "topological order, whatever the submission order");
  t.same(d.sinks, ["s3"]);
  t.same(d.producer.get("s2"), "c2", "GetProducer");
  t.same(d.consumers.get("doc"), ["c1", "c2"], "GetConsumers");
  t.same(objectives(d, { s3: "latency" }), { c1: "latency", c2: "latency", c3: "latency" });
});

t.test("map-reduce: the maps form one task group before a latency reduce", async (t) => {
  const maps = [0, 1, 2, 3].map((i) => ({ id: `map${i}`, inputs: [`chunk${i}`], outputs: [`sum${i}`] }));
  const d = dag([...maps, { id: "reduce", inputs: ["sum0", "sum1", "sum2", "sum3"], outputs: ["final"] }], ["chunk0", "chunk1", "chunk2", "chunk3"]);
  t.same(objectives(d, { final: "latency" }), {
    map0: "task-group:stage-1/4",
    map1: "task-group:stage-1/4",
    map2: "task-group:stage-1/4",
    map3: "task-group:stage-1/4",
    reduce: "latency",
  });
  t.same(objectives(d, { final: "throughput" }), { map0: "throughput", map1: "throughput", map2: "throughput", map3: "throughput", reduce: "throughput" }, "a throughput output marks everything behind it throughput");
});

t.test("Parrot Figure 7: code and test both fetched for latency", async (t) => {
  const d = dag(
    [
      { id: "WritePythonCode", inputs: ["task"], outputs: ["code"] },
      { id: "WriteTestCode", inputs: ["task", "code"], outputs: ["test"] },
    ],
    ["task"],
  );
  t.same(d.consumers.get("code"), ["WriteTestCode"], "code connects the two requests");
  t.same(objectives(d, { code: "latency", test: "latency" }), { WritePythonCode: "latency", WriteTestCode: "latency" });
  // Only `test` for latency: WritePythonCode is its single predecessor, still on the critical path.
  t.same(objectives(d, { test: "latency" }), { WritePythonCode: "latency", WriteTestCode: "latency" });
});

t.test("multi-agent (architect → K coders → K reviewers → K revisions): one task group per parallel stage", async (t) => {
  const K = 3;
  const calls: DagCall[] = [{ id: "architect", inputs: ["task"], outputs: ["design"] }];
  for (let i = 0; i < K; i++) calls.push({ id: `coder${i}`, inputs: ["design"], outputs: [`code${i}`] });
  // Each reviewer reads all the code (the integration), then comments on its own file.
  for (let i = 0; i < K; i++) calls.push({ id: `reviewer${i}`, inputs: Array.from({ length: K }, (_, j) => `code${j}`), outputs: [`review${i}`] });
  for (let i = 0; i < K; i++) calls.push({ id: `reviser${i}`, inputs: [`code${i}`, `review${i}`], outputs: [`final${i}`] });
  const d = dag(calls, ["task"]);
  const finals = Object.fromEntries(Array.from({ length: K }, (_, i) => [`final${i}`, "latency" as const]));
  const o = objectives(d, finals);
  t.equal(o["architect"], "latency", "the lone architect gates everything");
  for (let i = 0; i < K; i++) {
    t.equal(o[`coder${i}`], "task-group:stage-2/3", `coder${i}: longest path coder → reviewer → reviser`);
    t.equal(o[`reviewer${i}`], "task-group:stage-1/3");
    t.equal(o[`reviser${i}`], "latency", "produces a final output");
  }
});

t.test("mixed criteria: latency wins over throughput upstream of both; unrelated work is throughput", async (t) => {
  const d = dag(
    [
      { id: "a", inputs: ["x"], outputs: ["y"] },
      { id: "fast", inputs: ["y"], outputs: ["answer"] },
      { id: "bulk", inputs: ["y"], outputs: ["report"] },
      { id: "side", inputs: ["x"], outputs: ["log"] },
    ],
    ["x"],
  );
  t.same(objectives(d, { answer: "latency", report: "throughput" }), { a: "latency", side: "throughput", fast: "latency", bulk: "throughput" });
});

t.test("errors name what is wrong", async (t) => {
  const cycle = buildDag(
    [
      { id: "a", inputs: ["x", "z"], outputs: ["y"] },
      { id: "b", inputs: ["y"], outputs: ["z"] },
      { id: "c", inputs: ["x"], outputs: ["w"] },
    ],
    new Set(["x"]),
  );
  t.equal(cycle.ok, false);
  if (!cycle.ok && cycle.error.kind === "cycle") {
    t.same([...cycle.error.variables].sort(), ["y", "z"], "the variables on the cycle");
    t.same([...cycle.error.calls].sort(), ["a", "b"]);
    t.match(describeDagError(cycle.error), /cycle through variables "(y|z)" → "(y|z)"/);
  } else t.fail("expected a cycle");
  const self = buildDag([{ id: "a", inputs: ["y"], outputs: ["y"] }], new Set());
  t.same(!self.ok && self.error.kind === "cycle" ? self.error.variables : null, ["y"], "a call feeding itself");
  const unknown = buildDag([{ id: "a", inputs: ["nope"], outputs: ["y"] }], new Set(["x"]));
  t.same(!unknown.ok ? unknown.error : null, { kind: "unknown-variable", variable: "nope", call: "a" });
  const twice = buildDag(
    [
      { id: "a", inputs: ["x"], outputs: ["y"] },
      { id: "b", inputs: ["x"], outputs: ["y"] },
    ],
    new Set(["x"]),
  );
  t.same(!twice.ok ? twice.error : null, { kind: "duplicate-producer", variable: "y", calls: ["a", "b"] });
  const givenAndProduced = buildDag([{ id: "a", inputs: [], outputs: ["x"] }], new Set(["x"]));
  t.equal(!givenAndProduced.ok && givenAndProduced.error.kind, "duplicate-producer");
});
