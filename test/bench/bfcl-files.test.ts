import t from "tap";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { buildTasks, defaultBfclDir, parseGroundTruthCall, readEntries } from "../../bench/bfcl/load-tasks.js";

const dir = defaultBfclDir();
const present = existsSync(join(dir, "BFCL_v4_parallel.json"));

t.test("ground-truth Python calls map positional arguments by parameter order", async (t) => {
  const tools = [{ name: "sort", description: "", parameters: { type: "object", properties: { file_name: { type: "string" }, reverse: { type: "boolean" } } } }];
  t.same(parseGroundTruthCall("sort('a.pdf', reverse=True)", tools), { tool: "sort", arguments: { file_name: "a.pdf", reverse: true } });
  t.throws(() => parseGroundTruthCall("nope()", tools), /not offered/);
  t.throws(() => parseGroundTruthCall("sort('a', True, 3)", tools), /too many positional/);
});

t.test("the repository's BFCL files build every workload", { skip: present ? false : `no BFCL data at ${dir}` }, async (t) => {
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

t.test("a single category file given with --questions is read as-is", { skip: present ? false : "no BFCL data" }, async (t) => {
  const entries = readEntries({ questions: join(dir, "BFCL_v4_simple_python.json") });
  t.equal(entries.length, 400);
  t.ok(entries.every((e) => e.kind === "single" && e.calls.length === 1));
});
