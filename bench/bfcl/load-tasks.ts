/**
 * @module Which BFCL files feed which workload. By default the BFCL folder
 * (`$BFCL_DIR`, else the copy shipped in `bench/bfcl/data`) is scanned: every single-turn file whose name says "parallel" feeds the
 * parallel workload and every multi-turn file feeds multistep/interrupts.
 * `--questions FILE [--answers FILE]` replaces the scan with one file of any
 * category; its entries' shape decides the workloads it feeds.
 */
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { ToolSpec } from "../../common/src/index.js";
import { validateArguments } from "../../common/src/wire/index.js";
import { parsePythonCall, propertyOrder } from "../../engine-pod/src/cml/index.js";
import { readBfcl, type BfclEntry, type GroundTruthCall } from "./bfcl-reader.js";
import { buildMultistepTasks, buildParallelTasks, type BenchTask, type BuildOptions, type WorkloadName } from "./workloads.js";

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** `$BFCL_DIR`, else the BFCL data shipped with the repository (`bench/bfcl/data`, with BFCL's licence). */
export function defaultBfclDir(): string {
  const dir = process.env["BFCL_DIR"];
  return dir !== undefined && dir !== "" ? dir : resolve(REPO_ROOT, "bench/bfcl/data");
}

/** Ground-truth strings like `sort('final_report.pdf')`: positional arguments follow the tool's parameter order. */
export function parseGroundTruthCall(text: string, tools: ToolSpec[]): GroundTruthCall {
  const parsed = parsePythonCall(text);
  if (!parsed.ok) throw new Error(`ground truth "${text}": ${parsed.message}`);
  const { name, positional, keywords } = parsed.call;
  const tool = tools.find((t) => t.name === name);
  if (tool === undefined) throw new Error(`ground truth "${text}": tool ${name} is not offered`);
  const order = propertyOrder(tool.parameters);
  const args: Record<string, unknown> = {};
  positional.forEach((value, i) => {
    const key = order[i];
    if (key === undefined) throw new Error(`ground truth "${text}": too many positional arguments`);
    args[key] = value;
  });
  for (const [key, value] of keywords) args[key] = value;
  return { tool: name, arguments: args };
}

export interface TaskSource {
  questions?: string;
  answers?: string;
  bfclDir?: string;
}

export function readEntries(source: TaskSource): BfclEntry[] {
  const read = (questions: string, answers?: string) =>
    readBfcl({ questions, ...(answers !== undefined ? { answers } : {}), parsePythonCall: parseGroundTruthCall });
  if (source.questions !== undefined) return read(source.questions, source.answers);
  const dir = source.bfclDir ?? defaultBfclDir();
  if (!existsSync(dir)) throw new Error(`BFCL folder not found: ${dir} (set BFCL_DIR or pass --questions FILE)`);
  const files = readdirSync(dir).filter((f) => f.endsWith(".json") && existsSync(join(dir, "possible_answer", f)));
  // Single-turn categories other than "parallel" ones have one call per entry:
  // nothing to overlap, so the default scan leaves them out.
  const wanted = files.filter((f) => /parallel|multi_turn/.test(f) && !/parallel_multiple/.test(f));
  return wanted.flatMap((f) => read(join(dir, f)));
}

export function buildTasks(entries: BfclEntry[], workload: WorkloadName, options: BuildOptions): BenchTask[] {
  switch (workload) {
    case "parallel":
      return buildParallelTasks(entries, options);
    case "multistep":
      return buildMultistepTasks(entries, { ...options, userInterrupts: false });
    case "interrupts":
      return buildMultistepTasks(entries, { ...options, userInterrupts: true });
  }
}

/** A task left out of a run, and why. */
export interface SkippedTask {
  taskId: string;
  sources: string[];
  reason: string;
}

/**
 * Splits off the tasks whose answer key their own tool schemas reject (e.g.
 * `live_parallel_multiple_2-2-0` asks for an `enum` value the tool does not
 * list): the engine refuses such a call with an `invalid_arguments` error the
 * model reads, so the task could never dispatch all its calls. Checked with
 * the engine's own validator.
 */
export function splitByGroundTruth(tasks: readonly BenchTask[]): { runnable: BenchTask[]; skipped: SkippedTask[] } {
  const runnable: BenchTask[] = [];
  const skipped: SkippedTask[] = [];
  for (const task of tasks) {
    const problems = task.calls.flatMap((call) => {
      const tool = task.tools.find((t) => t.name === call.tool);
      const v = tool === undefined ? { ok: false as const, error: "not offered" } : validateArguments(tool.parameters, call.arguments, call.tool);
      return v.ok ? [] : [`${call.tool}: ${v.error}`];
    });
    if (problems.length === 0) runnable.push(task);
    else skipped.push({ taskId: task.id, sources: task.sources, reason: `BFCL's answer key fails its own tool schema (${problems.join("; ")})` });
  }
  return { runnable, skipped };
}
