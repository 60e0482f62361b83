/**
 * Semantic-function templates and program requests without engines: the
 * template cut at its placeholders, a function's checks, a program body
 * parsed against an app (bindings, defaults, 400s and 413s), and prompts
 * rendered up to an output and cut at variable boundaries, so calls of one
 * function share the hash of the text before their first variable. Functions
 * defined in the request, checked within the app's limits; an open program
 * extended call by call, then closed.
 */
import t from "tap";
import { extendPrefixChain } from "../../common/src/prefix-hash.js";
import { checkSemanticFunction, parseTemplate, templateInputs, templateOutputs, type SemanticFunction } from "../../common/src/semantic-function.js";
import { extendProgram, parseProgram } from "../../router/src/programs/program-request.js";
import { renderUntil } from "../../router/src/programs/render.js";
import { appConfig } from "./fixtures.js";

const plan: SemanticFunction = {
  name: "plan",
  template: "Task: {{input:task}}\nSteps: {{output:steps}}\nRisks for {{input:task}}: {{ output : risks }}",
  outputs: [
    { name: "steps", maxTokens: 10, temperature: 0 },
    { name: "risks", maxTokens: 10, temperature: 0 },
  ],
  tools: false,
};
const join: SemanticFunction = { name: "join", template: "Parts:\n{{input:parts}}\nWhole: {{output:whole}}", outputs: [{ name: "whole", maxTokens: 5, temperature: 0 }], tools: false };
const app = appConfig("r", { semanticFunctions: [plan, join] });
const limits = { maxValueBytes: 100, maxCalls: 4 };

t.test("templates: pieces, inputs, outputs, checks", async (t) => {
  const pieces = parseTemplate(plan.template);
  t.same(pieces.map((p) => (p.kind === "text" ? p.text : `${p.kind}:${p.name}`)), ["Task: ", "input:task", "\nSteps: ", "output:steps", "\nRisks for ", "input:task", ": ", "output:risks"]);
  t.same(templateInputs(pieces), ["task"]);
  t.same(templateOutputs(pieces), ["steps", "risks"]);
  t.equal(checkSemanticFunction(plan, "f"), null);
  t.match(checkSemanticFunction({ name: "x", template: "no placeholders", outputs: [] }, "f"), /needs at least one \{\{output:name\}\}/);
});

t.test("a program body: bindings, defaults and errors", async (t) => {
  const p = parseProgram(app, { inputs: { task: "ship it", p1: "a", p2: "b" }, calls: [{ function: "plan" }, { id: "j", function: "join", inputs: { parts: ["p1", "steps", "p2"] } }] }, limits);
  t.same(p.calls[0]!.id, "plan_0", "default call id");
  t.same([...p.calls[0]!.produces], [["steps", "steps"], ["risks", "risks"]], "unbound outputs use the same names");
  t.same(p.calls[1]!.bind.get("parts"), ["p1", "steps", "p2"]);
  t.same([...p.finals], [["risks", "latency"], ["whole", "latency"]], "sinks are final with the app's objective");
  t.same(p.dag.order, ["plan_0", "j"]);
  const bad = (body: unknown): string => {
    try {
      parseProgram(app, body, limits);
      return "accepted";
    } catch (err) {
      return `${(err as { status: number }).status} ${(err as Error).message}`;
    }
  };
  t.match(bad({ calls: [] }), /^400 "calls" must be a non-empty array/);
  t.match(bad({ calls: [{ function: "plan" }], extra: 1 }), /^400 unknown field "extra"/);
  t.match(bad({ calls: [{ function: "plan" }, { function: "plan" }], inputs: { task: "x" } }), /^400 variable "steps" is produced twice/);
  t.match(bad({ inputs: { task: "x".repeat(101) }, calls: [{ function: "plan" }] }), /^413 inputs\.task is 101 bytes/);
  t.match(bad({ inputs: { task: "x" }, calls: Array.from({ length: 5 }, (_, i) => ({ function: "plan", outputs: { steps: `s${i}`, risks: `r${i}` } })) }), /^413 the program has 5 calls/);
  t.match(bad({ inputs: { task: "x" }, calls: [{ function: "plan" }], outputs: { steps: "fast" } }), /^400 outputs\.steps must be "latency" or "throughput"/);
  t.match(bad({ inputs: { task: "x" }, calls: [{ function: "plan" }], outputs: { task: "latency" } }), /^400 outputs\.task: no call produces/);
  t.match(bad({ inputs: { "bad-name": "x" }, calls: [{ function: "plan" }] }), /^400 inputs key must be a variable name/);
});

t.test("prompts rendered up to an output, cut at variable boundaries", async (t) => {
  const p = parseProgram(app, { inputs: { task: "ship it", other: "test it" }, calls: [{ id: "a", function: "plan" }, { id: "b", function: "plan", inputs: { task: "other" }, outputs: { steps: "s2", risks: "r2" } }] }, limits);
  const values = new Map([...p.inputs, ["steps", "1. build"]]);
  const [a, b] = p.calls;
  const first = renderUntil(a!, "steps", (v) => values.get(v) ?? "");
  t.equal(first.text, "Task: ship it\nSteps: ");
  t.same(first.segments, ["Task: ", "ship it\nSteps: "], "cut where each variable starts");
  const second = renderUntil(a!, "risks", (v) => values.get(v) ?? "");
  t.equal(second.text, "Task: ship it\nSteps: 1. build\nRisks for ship it: ", "the second output sees the first's value");
  const other = renderUntil(b!, "steps", (v) => values.get(v) ?? "");
  const chainA = extendPrefixChain("app", first.segments);
  const chainB = extendPrefixChain("app", other.segments);
  t.equal(chainA[0], chainB[0], "the text before the first variable hashes equally");
  t.not(chainA[1], chainB[1], "different values diverge after it");
});

const shout = { name: "shout", template: "Say it loud: {{input:text}}\nLoud: {{output:loud}}", outputs: [{ name: "loud", maxTokens: 8 }] };

t.test("functions defined in the request: used like the app's, checked within its limits", async (t) => {
  const p = parseProgram(app, { inputs: { text: "hi" }, functions: [shout], calls: [{ id: "s", function: "shout" }, { function: "join", inputs: { parts: ["loud"] } }] }, limits);
  t.same(p.calls[0]!.fn, { name: "shout", template: shout.template, outputs: [{ name: "loud", maxTokens: 8, temperature: 0 }], tools: false }, "defaults filled in");
  t.same([...p.functions.keys()], ["shout"]);
  t.same(p.dag.order, ["s", "join_1"], "an inline function's output feeds an app function");
  const withTools = parseProgram(app, { inputs: { text: "x" }, functions: [{ ...shout, tools: ["sleep"] }], calls: [{ function: "shout" }] }, limits);
  t.same(withTools.calls[0]!.fn.tools, ["sleep"], "a subset of the app's tools");
  const bad = (fn: unknown, calls: unknown[] = [{ function: "shout" }]): string => {
    try {
      parseProgram(app, { inputs: { text: "x" }, functions: [fn], calls }, limits);
      return "accepted";
    } catch (err) {
      return `${(err as { status: number }).status} ${(err as Error).message}`;
    }
  };
  t.match(bad({ ...shout, outputs: [] }), /^400 functions\[0\]\.outputs: the template's \{\{output:loud\}\} is not declared/);
  t.match(bad({ ...shout, template: "no outputs {{input:text}}" }), /^400 functions\[0\]\.template: needs at least one \{\{output:name\}\}/);
  t.match(bad({ ...shout, outputs: [{ name: "loud", maxTokens: 100_000 }] }), /^400 functions\[0\]\.outputs\[0\]\.maxTokens must be an integer in 1\.\.256 \(the AgentApp's maxTokens\)/);
  t.match(bad({ ...shout, outputs: [{ name: "loud", temperature: 3 }] }), /^400 functions\[0\]\.outputs\[0\]\.temperature must be a number in 0\.\.2/);
  t.match(bad({ ...shout, tools: ["rm_rf"] }), /^400 functions\[0\]\.tools\[0\]: "rm_rf" is not a tool of AgentApp default\/r \(it has sleep\)/);
  t.match(bad({ ...shout, model: "gpt-9" }), /^400 functions\[0\]: unknown field "model"/, "no other model than the app's pool");
  t.match(bad({ ...shout, name: "plan" }), /^400 functions\[0\]\.name: "plan" is a semantic function of AgentApp default\/r/);
  t.match(bad({ ...shout, name: "bad name" }), /^400 functions\[0\]\.name: "bad name" must match/);
  t.match(bad({ ...shout, template: "x".repeat(65_537) + "{{output:loud}}" }), /^413 functions\[0\]\.template is 65552 characters; a template holds at most 65536/);
  t.match(bad(shout, [{ function: "yell" }]), /^400 calls\[0\]\.function: AgentApp default\/r has no semantic function "yell", and the program defines none by that name \(known: plan, join, shout\)/);
});

t.test("an open program grows call by call; closing makes its sinks final", async (t) => {
  const open = parseProgram(app, { open: true, inputs: { text: "hi" }, functions: [shout] }, limits);
  t.equal(open.open, true);
  t.equal(open.calls.length, 0, "an open program may start empty");
  const one = extendProgram(app, open, { calls: [{ id: "s", function: "shout" }] }, limits);
  t.same(one.dag.order, ["s"]);
  t.same([...one.finals], [], "no final output until a get or outputs names one");
  const two = extendProgram(app, one, { functions: [shout], inputs: { p1: "a" }, calls: [{ id: "j", function: "join", inputs: { parts: ["p1", "loud"] } }], outputs: { whole: "throughput" } }, limits);
  t.same(two.dag.order, ["s", "j"], "later calls read earlier calls' variables");
  t.same([...two.finals], [["whole", "throughput"]]);
  const closed = extendProgram(app, two, { close: true }, limits);
  t.equal(closed.open, false);
  t.same([...closed.finals], [["whole", "throughput"]], "named outputs stay the finals");
  t.same([...extendProgram(app, one, { close: true }, limits).finals], [["loud", "latency"]], "none named: the sinks, with the app's objective");
  const bad = (base: typeof one, body: unknown): string => {
    try {
      extendProgram(app, base, body, limits);
      return "accepted";
    } catch (err) {
      return `${(err as { status: number }).status} ${(err as Error).message}`;
    }
  };
  t.match(bad(one, { calls: [{ id: "s", function: "shout", outputs: { loud: "l2" } }] }), /^400 calls\[0\]\.id: "s" is used by another call/);
  t.match(bad(one, { inputs: { loud: "x" } }), /^400 inputs\.loud: the program already has a variable "loud"/);
  t.match(bad(one, { functions: [{ ...shout, template: shout.template + " " }] }), /^400 functions\[0\]\.name: the program already defines "shout" differently/);
  t.match(bad(one, { calls: [{ function: "join", inputs: { parts: ["later"] } }] }), /^400 call "join_1" reads variable "later"/, "variables must exist when a call reads them");
  t.match(bad(one, { open: true }), /^400 unknown field "open"/);
  t.match(bad(one, { calls: Array.from({ length: 4 }, (_, i) => ({ function: "shout", outputs: { loud: `l${i}` } })) }), /^413 the program has 5 calls/);
});
