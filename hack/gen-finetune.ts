/**
 * @module `npm run gen-finetune -- --out FILE [--questions FILE[,FILE..]]
 * [--split tuning|eval|all] [--runs N] [--tasks N] [--seed N]
 * [--call-style json|python]`: CML fine-tuning data (AsyncLM §4.2) from BFCL
 * tasks, as JSON Lines of `{"messages": [{role, content}..], ...}`, the chat
 * format LlamaFactory (sharegpt/openai style), TRL and most fine-tuning tools
 * read. Each line also carries `segments` (which spans the model wrote and
 * which the engine injected: mask the `engine` spans out of the loss), the
 * DAG and the simulation's TPOT and makespan. Every sample is validated
 * (hack/finetune/validate.ts) before it is written; a failure stops the run.
 *
 * By default only the tuning split of BFCL ids is used, so the accuracy
 * benchmark's evaluation split stays unseen (the paper: 200 samples to
 * fine-tune, 600 to evaluate).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import { parseArgv } from "../common/src/index.js";
import { inSplit, type Split } from "../bench/accuracy/split.js";
import { buildTasks, readEntries } from "../bench/bfcl/load-tasks.js";
import { mulberry32 } from "../bench/bfcl/seeded-random.js";
import { buildSample } from "./finetune/build-samples.js";
import { validateSample } from "./finetune/validate.js";

const flags = parseArgv(process.argv.slice(2));
const out = flags.get("out");
if (out === undefined || out === "true") {
  console.error("usage: npm run gen-finetune -- --out FILE [--questions FILE[,FILE..]] [--split tuning|eval|all] [--runs N] [--tasks N] [--seed N] [--call-style json|python]");
  process.exit(2);
}
const split = (flags.get("split") ?? "tuning") as Split;
if (!["tuning", "eval", "all"].includes(split)) throw new Error("--split must be tuning, eval or all");
const style = flags.get("call-style") ?? "json";
if (style !== "json" && style !== "python") throw new Error("--call-style must be json or python");
const runs = Number(flags.get("runs") ?? 3);
const seed = Number(flags.get("seed") ?? 1);
const maxTasks = flags.get("tasks") !== undefined ? Number(flags.get("tasks")) : undefined;

const questions = flags.get("questions")?.split(",");
const answers = flags.get("answers")?.split(",");
const entries = (questions ?? [undefined])
  .flatMap((q, i) => readEntries(q === undefined ? {} : { questions: q, ...(answers?.[i] !== undefined ? { answers: answers[i] } : {}) }))
  .filter((e) => inSplit(e.id, split));
const build = { seed, ...(maxTasks !== undefined ? { maxTasks } : {}) };
const tasks = [...buildTasks(entries, "parallel", build), ...buildTasks(entries, "multistep", build)];
if (tasks.length === 0) throw new Error(`no tasks in the ${split} split of the given files`);

const ranks = createRequire(import.meta.url)("js-tiktoken/ranks/cl100k_base") as TiktokenBPE;
const encoder = new Tiktoken(ranks);
const countTokens = (text: string): number => encoder.encode(text).length;
const rng = mulberry32(seed);
const lines: string[] = [];
let interrupts = 0;
let traps = 0;
for (const task of tasks) {
  for (let r = 0; r < runs; r++) {
    const sample = buildSample(task, { rng, countTokens, callStyle: style });
    const problems = validateSample(sample);
    if (problems.length > 0) throw new Error(`sample ${task.id}#${r} failed validation: ${problems.join("; ")}`);
    interrupts += sample.segments.filter((s) => s.kind === "interrupt").length;
    traps += sample.segments.filter((s) => s.kind === "trap").length;
    lines.push(JSON.stringify(sample));
  }
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, lines.join("\n") + "\n");
console.log(`wrote ${lines.length} samples (${tasks.length} tasks × ${runs} runs, ${split} split; ${interrupts} interrupts, ${traps} traps) to ${out}; all passed the CML monitor replay`);
