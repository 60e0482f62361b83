/**
 * @module Synthetic training tasks: every task becomes a valid sample, every
 * value a call passes is spelled out in the request (so the model can learn to
 * copy it), an optional parameter is passed only when the request mentions it,
 * parallel requests get one call per item, the spellings vary, and no task
 * uses a function of the BFCL data the accuracy bench judges generalisation on.
 */
import t from "tap";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { mulberry32 } from "../../bench/bfcl/seeded-random.js";
import { defaultBfclDir } from "../../bench/bfcl/load-tasks.js";
import { buildSample } from "../../finetune/src/build-samples.js";
import { syntheticTasks } from "../../finetune/src/synthetic-tasks.js";
import { FAMILIES } from "../../finetune/src/synthetic-families.js";
import { validateSample } from "../../finetune/src/validate.js";

const tasks = syntheticTasks(2000, 3);

t.test("each task is a valid sample in both shapes", async (t) => {
  const rng = mulberry32(5);
  tasks.forEach((task, i) => {
    const shape = i % 2 === 0 ? "async" : "sync";
    const problems = validateSample(buildSample(task, { rng, countTokens: (s) => Math.ceil(s.length / 4), shape }));
    t.same(problems, [], `${task.id} (${shape})`);
  });
});

t.test("every value a call passes is spelled out in the request", async (t) => {
  const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
  const spelled = (v: unknown, text: string): boolean => {
    if (Array.isArray(v)) return v.every((x) => spelled(x, text));
    if (typeof v === "boolean") return true; // the request's wording ("vegetarian") stands for it
    const s = String(v);
    if (text.includes(s)) return true;
    // The description asks for another spelling: a rate as a decimal ("4.5%" → 0.045), a US city with its state code.
    if (typeof v === "number" && text.includes(`${Number((v * 100).toFixed(2))}%`)) return true;
    const cityState = /^(.+), [A-Z]{2}$/.exec(s);
    if (cityState !== null && text.includes(cityState[1]!)) return true;
    const iso = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
    return iso !== null && text.includes(`${MONTHS[Number(iso[2]) - 1]} ${Number(iso[3])}, ${iso[1]}`);
  };
  for (const task of tasks) {
    const text = task.messages[0]!.content;
    for (const c of task.calls) for (const [k, v] of Object.entries(c.arguments)) t.ok(spelled(v, text), `${task.id}: ${c.tool}.${k}=${JSON.stringify(v)} in "${text}"`);
  }
});

t.test("calls name offered tools, pass every required parameter and only known ones", async (t) => {
  for (const task of tasks) {
    for (const c of task.calls) {
      const tool = task.tools.find((x) => x.name === c.tool);
      t.ok(tool, `${task.id}: ${c.tool} offered`);
      const props = Object.keys((tool!.parameters["properties"] ?? {}) as object);
      const required = (tool!.parameters["required"] ?? []) as string[];
      t.ok(Object.keys(c.arguments).every((k) => props.includes(k)), `${task.id}: only known parameters`);
      t.ok(required.every((k) => k in c.arguments), `${task.id}: every required parameter`);
    }
  }
});

t.test("the kinds: one call, a choice among tools, one call per item, two functions", async (t) => {
  const by = (kind: string) => tasks.filter((x) => x.origin === `synthetic-${kind}`);
  for (const kind of ["single", "multiple", "parallel", "parallel-multiple"]) t.ok(by(kind).length > 40, `${kind}: ${by(kind).length} tasks`);
  t.ok(by("single").every((x) => x.calls.length === 1 && x.tools.length === 1));
  t.ok(by("multiple").every((x) => x.calls.length === 1 && x.tools.length >= 3));
  t.ok(by("parallel").every((x) => x.calls.length >= 2 && x.calls.length <= 4 && new Set(x.calls.map((c) => c.tool)).size === 1));
  t.ok(by("parallel").every((x) => new Set(x.calls.map((c) => JSON.stringify(c.arguments))).size === x.calls.length), "each parallel call differs");
  t.ok(by("parallel-multiple").every((x) => x.calls.length === 2 && x.calls[0]!.tool !== x.calls[1]!.tool));
  const withOptional = tasks.filter((x) => x.calls.some((c) => Object.keys(c.arguments).length < Object.keys((x.tools.find((y) => y.name === c.tool)!.parameters["properties"] ?? {}) as object).length));
  t.ok(withOptional.length > tasks.length / 4, "optional parameters are often left out");
});

t.test("spellings vary and the same seed gives the same tasks", async (t) => {
  const names = new Set(tasks.flatMap((x) => x.tools.map((y) => y.name)));
  t.ok(names.size >= FAMILIES.length * 2, `${names.size} function names`);
  t.same(syntheticTasks(50, 3), tasks.slice(0, 50));
  t.not(JSON.stringify(syntheticTasks(50, 4)), JSON.stringify(tasks.slice(0, 50)));
});

const bfclDir = defaultBfclDir();
t.test("no function of the BFCL data is a synthetic one", { skip: existsSync(bfclDir) ? false : `BFCL data not found at ${bfclDir}` }, async (t) => {
  const bfclNames = new Set<string>();
  for (const f of ["BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json", "BFCL_v4_live_parallel.json"]) {
    const path = join(bfclDir, f);
    if (!existsSync(path)) continue;
    for (const line of readFileSync(path, "utf8").split("\n").filter((l) => l.trim() !== "")) {
      for (const fn of (JSON.parse(line) as { function: { name: string }[] }).function) bfclNames.add(fn.name);
    }
  }
  t.ok(bfclNames.size > 100);
  const clash = FAMILIES.flatMap((f) => f.names).filter((n) => bfclNames.has(n));
  t.same(clash, []);
});
