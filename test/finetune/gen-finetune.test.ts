/**
 * @module The fine-tuning data generator (AsyncLM §4.2): simulated samples
 * parse, respect their DAG's dependencies and place every interrupt after
 * its call (and after the call's simulated run time); the validation pass
 * catches samples that break those rules.
 */
import t from "tap";
import type { ToolSpec } from "../../common/src/index.js";
import { mulberry32 } from "../../bench/bfcl/seeded-random.js";
import type { BenchTask } from "../../bench/bfcl/workloads.js";
import { parseCallBody } from "../../engine-pod/src/cml/index.js";
import { buildSample } from "../../hack/finetune/build-samples.js";
import { simulate } from "../../hack/finetune/simulate.js";
import { validateSample } from "../../hack/finetune/validate.js";

const obj = (props: Record<string, string>): ToolSpec["parameters"] => ({
  type: "object",
  properties: Object.fromEntries(Object.entries(props).map(([k, type]) => [k, { type }])),
  required: Object.keys(props),
});
const tools: ToolSpec[] = [
  { name: "cd", description: "Change directory.", parameters: obj({ folder: "string" }) },
  { name: "mv", description: "Move a file.", parameters: obj({ source: "string", destination: "string" }) },
  { name: "get_stock", description: "Stock price.", parameters: obj({ symbol: "string" }) },
];
// A chain (cd → mv) beside a fan-out of two independent calls.
const task: BenchTask = {
  id: "t0",
  workload: "multistep",
  sources: ["hand"],
  prompt: "Move report.txt into docs, and get the AAPL and MSFT prices.",
  tools,
  userInterrupts: [],
  calls: [
    { id: "a", tool: "cd", arguments: { folder: "docs" }, dependsOn: [], latencyMs: 0 },
    { id: "b", tool: "mv", arguments: { source: "report.txt", destination: "docs" }, dependsOn: ["a"], latencyMs: 0 },
    { id: "c", tool: "get_stock", arguments: { symbol: "AAPL" }, dependsOn: [], latencyMs: 0 },
    { id: "d", tool: "get_stock", arguments: { symbol: "MSFT" }, dependsOn: [], latencyMs: 0 },
  ],
};
const countTokens = (s: string): number => Math.ceil(s.length / 4);
const BLOCK = /\[(CALL|INTR)\](\w+)\[HEAD\](.*?)\[END\]|\[TRAP\]\[END\]/g;

t.test("samples parse, respect the DAG and place each interrupt after its call", async (t) => {
  const rng = mulberry32(7);
  for (let run = 0; run < 50; run++) {
    const sample = buildSample(task, { rng, countTokens });
    t.same(validateSample(sample), [], `run ${run}: the CML monitor replay finds nothing`);
    t.same(sample.messages.map((m) => m.role), ["system", "user", "assistant"]);
    t.match(sample.messages[0]!.content, /estimated latency ~\d/, "the drawn latencies are shown to the model");
    const made = new Map<string, number>();
    const answered = new Map<string, number>();
    let index = 0;
    for (const m of sample.messages[2]!.content.matchAll(BLOCK)) {
      index++;
      if (m[1] === "CALL") {
        const call = task.calls.find((c) => c.id === m[2])!;
        t.ok(parseCallBody(m[3]!, tools).ok, `call ${m[2]} parses`);
        for (const dep of call.dependsOn) t.ok((answered.get(dep) ?? Infinity) < index, `${call.id} after the result of ${dep}`);
        made.set(m[2]!, index);
      } else if (m[1] === "INTR") {
        t.ok((made.get(m[2]!) ?? Infinity) < index, `interrupt ${m[2]} after its call`);
        answered.set(m[2]!, index);
      }
    }
    t.equal(made.size, 4, "every call once");
    t.equal(answered.size, 4, "every result once");
    // On the simulated clock: a result arrives no earlier than its call's end plus its run time.
    const lat = new Map(sample.dag.map((c) => [c.id, c.estimatedLatencyMs ?? 0]));
    for (const s of sample.segments) {
      if (s.kind !== "interrupt") continue;
      const call = sample.segments.find((x) => x.kind === "call" && x.id === s.id)!;
      t.ok(s.atMs + 0.11 >= call.atMs + lat.get(s.id)!, `interrupt ${s.id} at ${s.atMs} ms ≥ call end ${call.atMs} + ${lat.get(s.id)} ms`);
    }
    const tpot = sample.meta?.["tpot_ms"] as number;
    t.ok(tpot >= 5 && tpot <= 30, "TPOT in 5–30 ms");
    for (const c of sample.dag) t.ok(c.estimatedLatencyMs! >= 1 && c.estimatedLatencyMs! <= 1000, "latency in 1 ms–1 s");
    if (t.passing() === false) break;
  }
});

t.test("LPT: the longest ready call goes first; a trap only while results are pending", async (t) => {
  const sim = simulate(task.calls, { rng: mulberry32(3), countTokens });
  const firstCall = sim.segments.find((s) => s.kind === "call")!;
  const ready = sim.calls.filter((c) => c.dependsOn.length === 0);
  t.equal(firstCall.kind === "call" && firstCall.id, ready.reduce((a, b) => (b.estimatedLatencyMs > a.estimatedLatencyMs ? b : a)).id);
  t.equal(sim.segments.at(-1)?.kind, "text", "the final answer comes last");
});

t.test("the validation pass rejects broken samples", async (t) => {
  const good = buildSample(task, { rng: mulberry32(1), countTokens });
  const withAssistant = (content: string) => ({ ...good, messages: [good.messages[0]!, good.messages[1]!, { role: "assistant" as const, content }] });
  const c = (id: string, body: string) => `[CALL]${id}[HEAD]${body}[END]`;
  const i = (id: string) => `[INTR]${id}[HEAD]"ok"[END]`;
  const a = c("a", '{"name":"cd","arguments":{"folder":"docs"}}');
  const b = c("b", '{"name":"mv","arguments":{"source":"report.txt","destination":"docs"}}');
  const cc = c("c", '{"name":"get_stock","arguments":{"symbol":"AAPL"}}');
  const d = c("d", '{"name":"get_stock","arguments":{"symbol":"MSFT"}}');
  t.same(validateSample(withAssistant(a + cc + d + i("a") + b + i("c") + i("d") + i("b") + "Done.")), [], "a hand-written valid sample");
  t.match(validateSample(withAssistant(a + b + cc + d + i("a") + i("b") + i("c") + i("d"))), [/call b made before the result of a/]);
  t.match(validateSample(withAssistant(i("a") + a + cc + d + b + i("b") + i("c") + i("d"))), [/interrupt a before its call/]);
  t.match(validateSample(withAssistant(`[CALL]a[HEAD]{"name":"cd",${i("c")}"arguments":{"folder":"docs"}}[END]`)).join("\n"), /interrupt c inside a critical section/);
  t.match(validateSample(withAssistant(a + "[TRAP][END]" + i("a") + "[TRAP][END]")).join("\n"), /a trap with no call pending/);
  t.match(validateSample(withAssistant(c("a", '{"name":"cd","arguments":{"dir":"docs"}}'))).join("\n"), /call a: /, "a body that fails the schema");
});
