import t from "tap";
import { CML, type ToolSpec } from "../../common/src/index.js";
import { parseCallBody } from "../../engine-pod/src/cml/index.js";
import { buildCmlSystemPrompt, formatCallBody, formatLatency } from "../../engine-pod/src/prompt/index.js";

const TOOLS: ToolSpec[] = [
  { name: "fetch", description: "Fetches a URL.", parameters: { type: "object", properties: { url: { type: "string" } }, required: ["url"] }, estimatedLatencyMs: 2500 },
  { name: "add", description: "Adds.", parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } }, estimatedLatencyMs: 5 },
  { name: "noest", description: "", parameters: { type: "object" } },
];

t.test("the system prompt teaches CML and lists every tool with schema and latency", async (t) => {
  const p = buildCmlSystemPrompt({ system: "You are helpful.", tools: TOOLS });
  t.ok(p.startsWith("You are helpful."), "the app's system prompt comes first");
  for (const m of [CML.CALL, CML.HEAD, CML.END, CML.INTR, CML.TRAP]) t.match(p, m);
  t.match(p, /longest-running calls first/, "LPT hint");
  t.match(p, /never write it yourself/, "the model is told not to write [INTR]");
  t.match(p, "- fetch (estimated latency ~2.5 s): Fetches a URL.");
  t.match(p, "- add (estimated latency ~5 ms): Adds.");
  t.match(p, "- noest (estimated latency unknown)");
  t.match(p, JSON.stringify(TOOLS[0]!.parameters), "parameters as JSON Schema");
  t.match(p, /Example/, "few-shot example by default");
  t.notMatch(buildCmlSystemPrompt({ tools: TOOLS, fewShot: false }), /Example/);
  t.match(buildCmlSystemPrompt({ tools: TOOLS, fewShot: ["MY SHOT"] }), /MY SHOT/);
  t.equal(buildCmlSystemPrompt({ system: "S", tools: [] }), "S", "no tools: no CML instructions");
});

t.test("the few-shot example's call blocks are well-formed CML in the chosen style", async (t) => {
  for (const style of ["json", "python"] as const) {
    const p = buildCmlSystemPrompt({ tools: TOOLS, callStyle: style });
    const exampleTools: ToolSpec[] = ["fetch_report", "get_time", "send_email"].map((name) => ({ name, description: "", parameters: { type: "object" } }));
    const calls = [...p.matchAll(/\[CALL\](\w+)\[HEAD\](.*?)\[END\]/g)].filter((m) => m[1] !== "id");
    t.equal(calls.length, 3, `${style}: three example calls`);
    for (const m of calls) t.match(parseCallBody(m[2]!, exampleTools), { ok: true, style }, m[2] ?? "");
    t.match(p, /\[TRAP\]\[END\]/, "the example shows a trap");
  }
});

t.test("formatting helpers", async (t) => {
  t.equal(formatCallBody("f", { a: 1, s: "x", n: null, b: true, l: [false], d: { k: null } }, "python"), 'f(a=1, s="x", n=None, b=True, l=[False], d={"k": None})');
  t.equal(formatCallBody("f", { a: 1 }), '{"name":"f","arguments":{"a":1}}');
  t.equal(formatLatency(999.6), "~1000 ms");
  t.equal(formatLatency(12_345), "~12 s");
  t.equal(formatLatency(undefined), "unknown");
});
