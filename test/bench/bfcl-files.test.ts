import t from "tap";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { validateArguments } from "../../common/src/wire/validator.js";
import { groundTruthArguments } from "../../bench/bfcl/bfcl-reader.js";
import { buildTasks, defaultBfclDir, parseGroundTruthCall, readEntries, splitByGroundTruth } from "../../bench/bfcl/load-tasks.js";
import { refusals } from "../../bench/bfcl/session-modes.js";

const dir = defaultBfclDir();
const LPM = fileURLToPath(new URL("../../bench/bfcl/data/live_parallel_multiple/BFCL_v4_live_parallel_multiple.json", import.meta.url));

t.test("the BFCL data ships with the repository, with BFCL's licence; BFCL_DIR still points elsewhere", async (t) => {
  const saved = process.env["BFCL_DIR"];
  t.teardown(() => (saved === undefined ? delete process.env["BFCL_DIR"] : (process.env["BFCL_DIR"] = saved)));
  delete process.env["BFCL_DIR"];
  t.match(defaultBfclDir(), /bench\/bfcl\/data$/);
  for (const f of ["LICENSE", "README.md", "BFCL_v4_parallel.json", "possible_answer/BFCL_v4_parallel.json", "multi_turn_func_doc/math_api.json"]) t.ok(existsSync(join(defaultBfclDir(), f)), f);
  t.match(readFileSync(join(defaultBfclDir(), "LICENSE"), "utf8"), /Apache License/);
  process.env["BFCL_DIR"] = "/elsewhere/bfcl";
  t.equal(defaultBfclDir(), "/elsewhere/bfcl");
});

t.test("ground-truth Python calls map positional arguments by parameter order", async (t) => {
  const tools = [{ name: "sort", description: "", parameters: { type: "object", properties: { file_name: { type: "string" }, reverse: { type: "boolean" } } } }];
  t.same(parseGroundTruthCall("sort('a.pdf', reverse=True)", tools), { tool: "sort", arguments: { file_name: "a.pdf", reverse: true } });
  t.throws(() => parseGroundTruthCall("nope()", tools), /not offered/);
  t.throws(() => parseGroundTruthCall("sort('a', True, 3)", tools), /too many positional/);
});

t.test("the repository's BFCL files build every workload", async (t) => {
  const entries = readEntries({});
  const parallel = buildTasks(entries, "parallel", { seed: 1 });
  t.equal(parallel.length, 216, "200 parallel + 16 live_parallel entries");
  t.ok(parallel.every((task) => task.calls.length >= 2 && task.calls.every((c) => c.dependsOn.length === 0)));
  const multistep = buildTasks(entries, "multistep", { seed: 1, maxTasks: 5 });
  t.equal(multistep.length, 5);
  t.ok(multistep.every((task) => task.sources.length === 3 && new Set(task.sources).size === 3));
  // Every call's tool is offered and its arguments are an object.
  for (const task of [...parallel, ...multistep]) {
    const names = new Set(task.tools.map((tool) => tool.name));
    for (const call of task.calls) if (!names.has(call.tool)) t.fail(`${task.id}: ${call.tool} not offered`);
  }
  const interrupts = buildTasks(entries, "interrupts", { seed: 1, maxTasks: 5 });
  t.ok(interrupts.every((task) => task.userInterrupts.length === 2));
});

t.test("a single category file given with --questions is read as-is", async (t) => {
  const entries = readEntries({ questions: join(dir, "BFCL_v4_simple_python.json") });
  t.equal(entries.length, 400);
  t.ok(entries.every((e) => e.kind === "single" && e.calls.length === 1));
});

t.test("ground-truth arguments: first acceptable value, nested dicts resolved, optional blanks left out unless required", async (t) => {
  const schema = { type: "object", required: ["id", "info"], properties: { id: { type: "integer" }, info: { type: "object", required: ["name"], properties: { name: { type: "string" } } } } };
  t.same(
    groundTruthArguments({ id: [7, 8], info: [{ name: ["John", "Jon"], email: ["", "a@b"] }], note: ["", "x"] }, schema),
    { id: 7, info: { name: "John" } },
    "a dict's values are acceptable-value lists too; blank-first optional keys are left out",
  );
  t.same(groundTruthArguments({ id: [7], info: [{ name: ["", "Ann"] }] }, schema), { id: 7, info: { name: "Ann" } }, "a required key marked optional gets its value");
  t.same(
    groundTruthArguments({ conditions: [[{ field: ["age"], value: ["25"] }, { field: ["job"], value: ["x"] }]] }),
    { conditions: [{ field: "age", value: "25" }, { field: "job", value: "x" }] },
    "the dicts of a list argument are resolved",
  );
  t.same(groundTruthArguments({ xs: [[1, 2, 3]] }), { xs: [1, 2, 3] }, "a plain list argument is kept");
});

t.test("every ground-truth call the benchmark runs, in every BFCL category, validates against its tool's schema", async (t) => {
  const files = readdirSync(dir).filter((f) => f.endsWith(".json") && existsSync(join(dir, "possible_answer", f)));
  t.ok(files.length >= 5, `${files.length} category files`);
  let calls = 0;
  const invalid: string[] = [];
  for (const file of files) {
    const entries = readEntries({ questions: join(dir, file) });
    for (const e of entries) {
      // Multi-turn tasks take their entries' first turns (multi_turn_base_173's fourth turn passes a string id to an integer parameter).
      const list = e.kind === "single" ? e.calls : (e.callsByTurn[0] ?? []);
      for (const c of list) {
        calls++;
        const tool = e.tools.find((x) => x.name === c.tool);
        const v = tool === undefined ? { ok: false as const, error: "tool not offered" } : validateArguments(tool.parameters, c.arguments, c.tool);
        if (!v.ok) invalid.push(`${e.id} ${c.tool}: ${v.error}`);
      }
    }
  }
  t.same(invalid, [], `${calls} calls; a call the schema rejects would reach the model as an error interrupt and the task would dispatch nothing`);
});

t.test("a task whose answer key fails its own tool schema is left out with the reason, before any run", async (t) => {
  const entries = readEntries({ questions: LPM });
  t.equal(entries.length, 24);
  const { runnable, skipped } = splitByGroundTruth(buildTasks(entries, "parallel", { seed: 1, maxTasks: 30 }));
  t.equal(runnable.length, 23);
  t.same(skipped.map((s) => s.sources), [["live_parallel_multiple_2-2-0"]], "only the entry whose answer key asks for a value outside the enum");
  t.match(skipped[0]?.reason, /ControlAppliance\.execute: "command" must be one of "거실, 에어컨, 실행"/);
  // The Korean argument of the same tool that the enum lists stays (live_parallel_multiple_3-2-1).
  t.ok(runnable.some((task) => task.calls.some((c) => c.arguments["command"] === "거실, 에어컨, 실행")));
});

t.test("a failed run names the calls the engine refused and why", async (t) => {
  t.equal(refusals([]), "");
  t.equal(
    refusals([{ type: "call_error", callId: "p3_c1", code: "invalid_arguments", message: 'invalid_arguments: "command" must be one of "a"', t: 1 }]),
    '; refused by the engine: p3_c1: invalid_arguments: "command" must be one of "a"',
  );
});
