/**
 * @module The fine-tuning data generator (AsyncLM §4.2): simulated samples
 * parse, respect their DAG's dependencies, place every interrupt after its
 * call (and after the call's simulated run time) and outside critical
 * sections, carry results the final answer reads, retry failed calls, and
 * count time in the target model's tokens; the validation pass catches
 * samples that break those rules; argument variants change the request and
 * the call alike; the tuning split is the only source.
 */
import t from "tap";
import type { ToolSpec } from "../../common/src/index.js";
import { isTuningId } from "../../bench/accuracy/split.js";
import { mulberry32 } from "../../bench/bfcl/seeded-random.js";
import { parseCallBody } from "../../engine-pod/src/cml/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { argumentVariant, fanOutVariant } from "../../finetune/src/argument-variants.js";
import { buildSample, type TrainingTask } from "../../finetune/src/build-samples.js";
import { bfclSources, buildDataset } from "../../finetune/src/dataset.js";
import { SampleTokenizer } from "../../finetune/src/sample-tokens.js";
import { simulate } from "../../finetune/src/simulate.js";
import { describeTool, successResult } from "../../finetune/src/tool-results.js";
import { validateSample } from "../../finetune/src/validate.js";
import { defaultBfclDir } from "../../bench/bfcl/load-tasks.js";
import { existsSync } from "node:fs";

const obj = (props: Record<string, string>): ToolSpec["parameters"] => ({
  type: "object",
  properties: Object.fromEntries(Object.entries(props).map(([k, type]) => [k, { type }])),
  required: Object.keys(props),
});
const tools: ToolSpec[] = [
  { name: "cd", description: "Change directory.", parameters: obj({ folder: "string" }) },
  { name: "mv", description: "Move a file.", parameters: obj({ source: "string", destination: "string" }) },
  { name: "get_stock_price", description: "Stock price.", parameters: obj({ symbol: "string" }) },
];
// A chain (cd → mv) beside a fan-out of two independent calls.
const task: TrainingTask = {
  id: "t0",
  origin: "hand",
  sources: ["hand"],
  messages: [{ role: "user", content: "Move report.txt into docs, and get the AAPL and MSFT prices." }],
  tools,
  calls: [
    { id: "a", tool: "cd", arguments: { folder: "docs" }, dependsOn: [] },
    { id: "b", tool: "mv", arguments: { source: "report.txt", destination: "docs" }, dependsOn: ["a"] },
    { id: "c", tool: "get_stock_price", arguments: { symbol: "AAPL" }, dependsOn: [] },
    { id: "d", tool: "get_stock_price", arguments: { symbol: "MSFT" }, dependsOn: [] },
  ],
};
const countTokens = (s: string): number => Math.ceil(s.length / 4);
const BLOCK = /\[(CALL|INTR)\](\w+)\[HEAD\](.*?)\[END\]|\[TRAP\]\[END\]/g;

t.test("samples parse, respect the DAG and place each interrupt after its call", async (t) => {
  const rng = mulberry32(7);
  let midSentence = 0;
  let retries = 0;
  for (let run = 0; run < 60; run++) {
    const sample = buildSample(task, { rng, countTokens });
    t.same(validateSample(sample), [], `run ${run}: the CML monitor replay finds nothing`);
    t.same(sample.messages.map((m) => m.role), ["system", "user", "assistant"]);
    t.match(sample.messages[0]!.content, /estimated latency ~\d/, "the drawn latencies are shown to the model");
    t.notMatch(sample.messages[0]!.content, /Example/, "no few-shot examples: a fine-tuned model is prompted without them");
    t.notMatch(sample.messages[0]!.content, /How to call a tool/, "the CML syntax in one line, not the rules");
    const byId = new Map(sample.dag.map((c) => [c.id, c]));
    const made = new Map<string, number>();
    const answered = new Map<string, number>();
    let index = 0;
    for (const m of sample.messages[2]!.content.matchAll(BLOCK)) {
      index++;
      if (m[1] === "CALL") {
        const call = byId.get(m[2]!)!;
        t.ok(parseCallBody(m[3]!, tools).ok, `call ${m[2]} parses`);
        for (const dep of call.dependsOn) t.ok((answered.get(dep) ?? Infinity) < index, `${call.id} after the result of ${dep}`);
        made.set(m[2]!, index);
      } else if (m[1] === "INTR") {
        t.ok((made.get(m[2]!) ?? Infinity) < index, `interrupt ${m[2]} after its call`);
        answered.set(m[2]!, index);
      }
    }
    const firstAttempts = sample.dag.filter((c) => c.retryOf === undefined);
    t.equal(firstAttempts.length, 4, "every DAG call once");
    retries += sample.dag.length - firstAttempts.length;
    t.equal(answered.size, sample.dag.length, "every call answered once");
    // On the simulated clock: a result arrives no earlier than its call's end plus its run time.
    for (const s of sample.segments) {
      if (s.kind !== "interrupt") continue;
      const call = sample.segments.find((x) => x.kind === "call" && x.id === s.id)!;
      t.ok(s.atMs + 0.11 >= call.atMs + byId.get(s.id)!.estimatedLatencyMs, `interrupt ${s.id} at ${s.atMs} ms ≥ call end ${call.atMs} + its run time`);
    }
    // An interrupt between two pieces of the model's text: the sentence goes on after it.
    sample.segments.forEach((s, i) => {
      if (s.kind === "interrupt" && sample.segments[i - 1]?.kind === "text" && sample.segments[i + 1]?.kind === "text" && !/[.!?]\s*$/.test(sample.segments[i - 1]!.text)) midSentence++;
    });
    t.equal(sample.segments.at(-1)?.kind, "text", "the final answer comes last");
    const tpot = sample.meta["tpot_ms"] as number;
    t.ok(tpot >= 5 && tpot <= 30, "TPOT in 5–30 ms");
    if (t.passing() === false) break;
  }
  t.ok(midSentence > 0, `some interrupts land mid-sentence (${midSentence})`);
  t.ok(retries > 0, `some calls fail and are called again (${retries})`);
});

t.test("results differ from call to call, and the final answer reads them", async (t) => {
  const rng = mulberry32(11);
  const answers = new Set<string>();
  let used = 0;
  let total = 0;
  for (let run = 0; run < 40; run++) {
    const sample = buildSample(task, { rng, countTokens, shape: "sync" });
    const text = sample.messages[2]!.content;
    const final = sample.segments.filter((s) => s.kind === "text").map((s) => s.text).join("");
    answers.add(final);
    for (const m of text.matchAll(/\[INTR\]\w+\[HEAD\](\{.*?\})\[END\]/g)) {
      const values = Object.values(JSON.parse(m[1]!) as Record<string, unknown>).flat();
      const shown = values.filter((v) => typeof v === "number" || (typeof v === "string" && v !== "ok" && v !== "done"));
      if (shown.length === 0) continue;
      total++;
      if (shown.some((v) => final.includes(String(v)))) used++;
    }
  }
  t.ok(answers.size > 20, `varied final answers (${answers.size} distinct in 40 runs)`);
  t.ok(total > 0 && used / total > 0.9, `the answer uses the results (${used} of ${total})`);
  t.same(describeTool("math.calculate_triangle_area"), { verb: "calculate", noun: "triangle area" });
  t.same(describeTool("parking_lot.find_nearest"), { verb: "find", noun: "nearest parking lot" });
  t.match(successResult({ id: "x", tool: "calculate_area", arguments: { base: 2 }, dependsOn: [] }, () => 0.9).value, /"area":/);
});

t.test("sync shape: each result right after its call, no traps, nothing reported while waiting", async (t) => {
  const rng = mulberry32(5);
  for (let run = 0; run < 20; run++) {
    const sim = simulate(task.calls, { rng, countTokens, shape: "sync" });
    t.notOk(sim.segments.some((s) => s.kind === "trap"), "no trap");
    sim.segments.forEach((s, i) => {
      if (s.kind === "call") t.equal(sim.segments[i + 1]?.kind, "interrupt", `${s.id} is answered at once`);
    });
  }
});

t.test("LPT: the longest ready call goes first; a trap only while results are pending", async (t) => {
  const sim = simulate(task.calls, { rng: mulberry32(3), countTokens, failureRate: 0 });
  const firstCall = sim.segments.find((s) => s.kind === "call")!;
  const ready = sim.calls.filter((c) => c.dependsOn.length === 0);
  t.equal(firstCall.kind === "call" && firstCall.id, ready.reduce((a, b) => (b.estimatedLatencyMs > a.estimatedLatencyMs ? b : a)).id);
});

t.test("the validation pass rejects broken samples", async (t) => {
  const good = buildSample(task, { rng: mulberry32(1), countTokens });
  const dag = task.calls.map((c) => ({ ...c, estimatedLatencyMs: 1 }));
  const withAssistant = (content: string, extra: typeof dag = []) => ({ ...good, dag: [...dag, ...extra], messages: [good.messages[0]!, good.messages[1]!, { role: "assistant" as const, content }] });
  const c = (id: string, body: string) => `[CALL]${id}[HEAD]${body}[END]`;
  const i = (id: string, value = '"ok"') => `[INTR]${id}[HEAD]${value}[END]`;
  const a = c("a", '{"name":"cd","arguments":{"folder":"docs"}}');
  const b = c("b", '{"name":"mv","arguments":{"source":"report.txt","destination":"docs"}}');
  const cc = c("c", '{"name":"get_stock_price","arguments":{"symbol":"AAPL"}}');
  const d = c("d", '{"name":"get_stock_price","arguments":{"symbol":"MSFT"}}');
  t.same(validateSample(withAssistant(a + cc + d + i("a") + b + i("c") + i("d") + i("b") + "Done.")), [], "a hand-written valid sample");
  t.match(validateSample(withAssistant(a + b + cc + d + i("a") + i("b") + i("c") + i("d"))), [/call b made before the result of a/]);
  t.match(validateSample(withAssistant(i("a") + a + cc + d + b + i("b") + i("c") + i("d"))), [/interrupt a before its call/]);
  t.match(validateSample(withAssistant(`[CALL]a[HEAD]{"name":"cd",${i("c")}"arguments":{"folder":"docs"}}[END]`)).join("\n"), /interrupt c inside a critical section/);
  t.match(validateSample(withAssistant(a + "[TRAP][END]" + i("a") + "[TRAP][END]")).join("\n"), /a trap with no call pending/);
  t.match(validateSample(withAssistant(c("a", '{"name":"cd","arguments":{"dir":"docs"}}'))).join("\n"), /call a: /, "a body that fails the schema");
  // A failed result does not satisfy a dependency; its retry does.
  const retry = { id: "a_again", tool: "cd", arguments: { folder: "docs" }, dependsOn: [], estimatedLatencyMs: 1, retryOf: "a" };
  const again = c("a_again", '{"name":"cd","arguments":{"folder":"docs"}}');
  t.match(validateSample(withAssistant(a + i("a", "error: tool_timeout: slow") + b + cc + d + i("b") + i("c") + i("d") + again + i("a_again"), [retry])).join("\n"), /call b made before the result of a/);
  t.same(validateSample(withAssistant(a + cc + d + i("a", "error: tool_timeout: slow") + again + i("c") + i("d") + i("a_again") + b + i("b") + "Done.", [retry])), [], "a retried call");
  t.match(validateSample(withAssistant(a + again + i("a", "error: tool_timeout: slow") + i("a_again") + cc + d + b + i("b") + i("c") + i("d"), [retry])).join("\n"), /retries a before its failure arrived/);
});

t.test("argument variants change the request and the call alike", async (t) => {
  const weather: TrainingTask = {
    id: "w",
    origin: "bfcl",
    sources: ["w"],
    messages: [{ role: "user", content: "What's the weather in Boston for the next 3 days, in celsius?" }],
    tools: [{ name: "get_forecast", description: "Forecast.", parameters: { type: "object", properties: { location: { type: "string" }, days: { type: "integer" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } } } }],
    calls: [{ id: "c0", tool: "get_forecast", arguments: { location: "Boston", days: 3, unit: "celsius" }, dependsOn: [] }],
  };
  const v = argumentVariant(weather, mulberry32(2), 1)!;
  const args = v.calls[0]!.arguments;
  t.not(args["location"], "Boston", "the city changed");
  t.not(args["days"], 3, "the number changed");
  t.equal(args["unit"], "celsius", "an enum value stays");
  t.ok(v.messages[0]!.content.includes(String(args["location"])) && v.messages[0]!.content.includes(` ${String(args["days"])} days`), `the request says the new values: ${v.messages[0]!.content}`);
  t.equal(argumentVariant({ ...weather, calls: [{ ...weather.calls[0]!, arguments: { unit: "celsius" } }] }, mulberry32(2), 1), undefined, "nothing to vary: no variant");
  // Fan-out: the same request about several values, one call each.
  const fan = fanOutVariant(weather, mulberry32(4), 1)!;
  t.ok(fan.calls.length >= 2, `${fan.calls.length} calls`);
  const param = Object.keys(weather.calls[0]!.arguments).find((k) => fan.calls[0]!.arguments[k] !== fan.calls[1]!.arguments[k])!;
  t.ok(param === "location" || param === "days", `one argument fans out (${param})`);
  for (const c of fan.calls) {
    t.ok(fan.messages[0]!.content.includes(String(c.arguments[param])), `the request names ${String(c.arguments[param])}: ${fan.messages[0]!.content}`);
    t.same(c.dependsOn, [], "independent");
  }
  const sample = buildSample(fan, { rng: mulberry32(1), countTokens });
  t.same(validateSample(sample), [], "a fan-out sample validates");
  t.equal(fanOutVariant({ ...weather, calls: [...weather.calls, weather.calls[0]!] }, mulberry32(4), 1), undefined, "only one-call tasks fan out");
});

const bfclDir = defaultBfclDir();
t.test("the dataset is the tuning split only, tokenized with the target model's tokenizer", { skip: existsSync(bfclDir) ? false : `BFCL data not found at ${bfclDir}` }, async (t) => {
  const tokenizer = await SampleTokenizer.load(await ensureModel({ preset: "test" }));
  t.teardown(() => tokenizer.close());
  const sources = bfclSources(bfclDir).filter((s) => /simple_python|multi_turn/.test(s.questions));
  const { samples, stats } = buildDataset({ sources, split: "tuning", seed: 1, variants: 1, multiCallVariants: 1, fanOuts: 1, runs: 1, syncShare: 0.25, multistep: 2, synthetic: 0, callStyle: "json", instructions: "brief", maxTokens: 100_000 }, tokenizer);
  t.ok(stats.sources.every(isTuningId), `every source entry is in the tuning split (${stats.sources.length})`);
  t.ok(stats.byOrigin["variant"]! > 0 && stats.byOrigin["fan-out"]! > 0 && stats.byOrigin["multistep"]! > 0, `variants, fan-outs and multi-step tasks are in (${JSON.stringify(stats.byOrigin)})`);
  for (const sample of samples.slice(0, 40)) {
    // The clock counts the model's pieces in this model's tokens.
    const calls = sample.segments.filter((s) => s.by === "model");
    const tokens = calls.reduce((n, s) => n + tokenizer.countTokens(s.text), 0);
    const spans = sample.tokens!.loss_spans.reduce((n, [a, b]) => n + b - a, 0);
    t.equal(spans, tokens + 1, `${sample.meta["task"]}: the loss covers exactly the model's tokens and the end of turn`);
    t.ok(sample.tokens!.loss_spans.every(([a]) => a >= sample.tokens!.prompt_tokens), "nothing of the prompt is in the loss");
  }
});
