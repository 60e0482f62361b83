/**
 * @module The builtin tools shared by the in-process executor and the tool
 * runner: calculator grammar and errors, sleep/replay arguments and abort.
 */
import t from "tap";
import {
  BuiltinToolError,
  canonicalJson,
  createBuiltinTools,
  createReplayTool,
  evaluateExpression,
} from "../../common/src/builtin-tools/index.js";

t.test("calculator evaluates arithmetic without eval", async (t) => {
  const cases: [string, number][] = [
    ["1 + 2 * 3", 7],
    ["(1 + 2) * 3", 9],
    ["2 ^ 3 ^ 2", 512],
    ["2 ** 10", 1024],
    ["-2 ^ 2", -4],
    ["2 ^ -1", 0.5],
    ["10 % 4", 2],
    ["sqrt(16) + abs(-3)", 7],
    ["max(1, 5, 3) - min(4, 2)", 3],
    ["1.5e3 / 3", 500],
    [".5 + .25", 0.75],
    ["round(pi * 100)", 314],
    ["--3", 3],
  ];
  for (const [expr, want] of cases) t.equal(evaluateExpression(expr), want, expr);
  const errors: [string, RegExp][] = [
    ["1 / 0", /division by zero/],
    ["(1 + 2", /expected "\)"/],
    ["1 +", /unexpected end/],
    ["process.exit(1)", /bad number|unknown name/],
    ["constructor", /unknown name/],
    ["sqrt(1, 2)", /takes 1 argument/],
    ["", /empty expression/],
    ["1 2", /unexpected input/],
    ["ln(0)", /not a finite number/],
    ["x".repeat(2000), /longer than/],
  ];
  for (const [expr, re] of errors) t.throws(() => evaluateExpression(expr), re, expr.slice(0, 30));
  const tools = createBuiltinTools();
  t.equal(await tools.get("calculator")!.run({ expression: "0.1 + 0.2" }, new AbortController().signal), "0.3");
});

t.test("the default set and its specs", async (t) => {
  const tools = createBuiltinTools();
  t.same([...tools.keys()], ["echo", "sleep", "calculator", "replay"]);
  for (const tool of tools.values()) {
    t.equal(tool.spec.parameters["type"], "object", `${tool.spec.name} takes an object`);
    t.type(tool.spec.estimatedLatencyMs, "number", `${tool.spec.name} has an LPT hint`);
  }
  await t.rejects(tools.get("echo")!.run({ text: 3 }, new AbortController().signal), BuiltinToolError);
});

t.test("sleep stops at once when aborted", async (t) => {
  const sleep = createBuiltinTools().get("sleep")!;
  t.equal(await sleep.run({ ms: 5, result: "done" }, new AbortController().signal), "done");
  const ac = new AbortController();
  const p = sleep.run({ ms: 60_000 }, ac.signal);
  ac.abort(new Error("stop"));
  await t.rejects(p, /stop/);
  await t.rejects(sleep.run({ ms: -1 }, new AbortController().signal), /must be an integer/);
});

t.test("replay plays recordings from arguments or a table", async (t) => {
  const signal = new AbortController().signal;
  t.equal(await createReplayTool().run({ output: "recorded", latencyMs: 1 }, signal), "recorded");
  const spec = { name: "get_weather", description: "recorded", parameters: { type: "object" } };
  const table = {
    [canonicalJson({ city: "Paris", unit: "C" })]: { output: "18C", latencyMs: 1 },
    [canonicalJson({ city: "Oslo" })]: { output: "no such city", latencyMs: 1, failed: true },
  };
  const tool = createReplayTool({ spec, table });
  t.equal(tool.spec.name, "get_weather");
  t.equal(await tool.run({ unit: "C", city: "Paris" }, signal), "18C", "key order does not matter");
  await t.rejects(tool.run({ city: "Oslo" }, signal), /no such city/, "recorded failure");
  await t.rejects(tool.run({ city: "Rome" }, signal), /no recording/);
  const withFallback = createReplayTool({ spec, table, fallback: { output: "?", latencyMs: 0 } });
  t.equal(await withFallback.run({ city: "Rome" }, signal), "?");
});
