/**
 * Semantic-function templates and program requests without engines: the
 * template cut at its placeholders, a function's checks, a program body
 * parsed against an app (bindings, defaults, 400s and 413s), and prompts
 * rendered up to an output and cut at variable boundaries, so calls of one
 * function share the hash of the text before their first variable.
 */
import t from "tap";
import { extendPrefixChain } from "../../common/src/prefix-hash.js";
import { checkSemanticFunction, parseTemplate, templateInputs, templateOutputs, type SemanticFunction } from "../../common/src/semantic-function.js";
import { parseProgram } from "../../router/src/programs/program-request.js";
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
