/**
 * @module Reads BFCL files as they are (JSON Lines despite the `.json` name):
 * any single-turn category with its `possible_answer` file, and
 * `multi_turn_base`-style files with their answers and `multi_turn_func_doc`.
 * Nothing here depends on which categories are present: an entry's shape
 * (a `function` list vs `involved_classes`) says what it is.
 */
import { readFileSync, existsSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { ToolSpec } from "../../common/src/index.js";
import { bfclToJsonSchema } from "./bfcl-schema.js";

/** A call of the ground truth, before dependencies are decided. */
export interface GroundTruthCall {
  tool: string;
  arguments: Record<string, unknown>;
}

export interface SingleTurnEntry {
  kind: "single";
  id: string;
  messages: { role: string; content: string }[];
  tools: ToolSpec[];
  /** Calls of the entry's one turn; BFCL allows them in any order (independent). */
  calls: GroundTruthCall[];
  /** The possible answer as given: per call, each parameter's allowed values (`""`: may be omitted). */
  possible: { tool: string; params: Record<string, unknown[]> }[];
}

export interface MultiTurnEntry {
  kind: "multi";
  id: string;
  /** User text of each turn. */
  turns: string[];
  tools: ToolSpec[];
  /** Per turn, the ground-truth calls in order (Python-style strings, parsed). */
  callsByTurn: GroundTruthCall[][];
}

export type BfclEntry = SingleTurnEntry | MultiTurnEntry;

/** Parses one Python-style call string (`name(a=1, 'pos')`) against the offered tools. */
export type PythonCallParser = (call: string, tools: ToolSpec[]) => GroundTruthCall;

/** Upstream's class → func-doc file mapping (bfcl_eval constants). */
const CLASS_DOC_FILES: Record<string, string> = {
  GorillaFileSystem: "gorilla_file_system",
  MathAPI: "math_api",
  MessageAPI: "message_api",
  TwitterAPI: "posting_api",
  TicketAPI: "ticket_api",
  TradingBot: "trading_bot",
  TravelAPI: "travel_booking",
  VehicleControlAPI: "vehicle_control",
  WebSearchAPI: "web_search",
  MemoryAPI_kv: "memory_kv",
  MemoryAPI_vector: "memory_vector",
  MemoryAPI_rec_sum: "memory_rec_sum",
};

export function readJsonLines(path: string): Record<string, unknown>[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, i) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch (err) {
        throw new Error(`${path}:${i + 1}: not JSON: ${(err as Error).message}`);
      }
    });
}

/** `<dir>/BFCL_v4_x.json` → `<dir>/possible_answer/BFCL_v4_x.json`. */
export function defaultAnswersPath(questionsPath: string): string {
  return join(dirname(questionsPath), "possible_answer", basename(questionsPath));
}

function toToolSpec(fn: Record<string, unknown>): ToolSpec {
  const name = String(fn["name"]);
  return { name, description: String(fn["description"] ?? ""), parameters: bfclToJsonSchema(fn["parameters"] ?? { type: "dict", properties: {} }) };
}

/**
 * The first acceptable value of each parameter; `""` first means "may be
 * omitted", so the parameter is left out, unless the tool's schema requires
 * it (BFCL has answers that mark a required parameter optional): then the
 * first value given. A dict value lists acceptable values per key in turn
 * (BFCL's possible-answer format nests, also for the dicts of a list
 * argument), so it is resolved the same way; any other array value is a
 * list argument and is kept.
 */
export function groundTruthArguments(params: Record<string, unknown>, schema?: JsonSchemaLike): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  const required = new Set(schema?.required ?? []);
  for (const [name, acceptable] of Object.entries(params)) {
    const values = (Array.isArray(acceptable) ? acceptable : [acceptable]).filter((v) => v !== undefined);
    const given = values.filter((v) => v !== "");
    const first = values[0] === "" && !required.has(name) ? undefined : given[0];
    if (first === undefined) continue;
    args[name] = resolveNested(first, schema?.properties?.[name]);
  }
  return args;
}

/** The parts of a JSON schema the ground truth reads. */
interface JsonSchemaLike {
  type?: unknown;
  required?: string[];
  properties?: Record<string, JsonSchemaLike>;
  items?: JsonSchemaLike;
}

/** A dict (also one inside a list argument) holds per-key acceptable values; anything else is the value itself. */
function resolveNested(value: unknown, schema: JsonSchemaLike | undefined): unknown {
  if (isDict(value)) return groundTruthArguments(value, schema);
  if (Array.isArray(value) && value.some(isDict)) return value.map((v) => resolveNested(v, schema?.items));
  return value;
}

function isDict(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

export interface ReadOptions {
  questions: string;
  answers?: string;
  /** Folder of `<class>.json` tool docs for multi-turn entries; default: beside the questions file. */
  funcDocDir?: string;
  parsePythonCall: PythonCallParser;
}

export function readBfcl(options: ReadOptions): BfclEntry[] {
  const answersPath = options.answers ?? defaultAnswersPath(options.questions);
  if (!existsSync(answersPath)) throw new Error(`no answers file for ${options.questions} (looked for ${answersPath})`);
  const answers = new Map(readJsonLines(answersPath).map((a) => [String(a["id"]), a["ground_truth"]]));
  const funcDocDir = options.funcDocDir ?? join(dirname(options.questions), "multi_turn_func_doc");
  const docCache = new Map<string, ToolSpec[]>();
  const docsFor = (cls: string): ToolSpec[] => {
    const file = CLASS_DOC_FILES[cls] ?? cls;
    let specs = docCache.get(file);
    if (specs === undefined) {
      specs = readJsonLines(join(funcDocDir, `${file}.json`)).map(toToolSpec);
      docCache.set(file, specs);
    }
    return specs;
  };

  return readJsonLines(options.questions).map((q): BfclEntry => {
    const id = String(q["id"]);
    const truth = answers.get(id);
    if (truth === undefined) throw new Error(`${id}: no ground truth in ${answersPath}`);
    const turns = q["question"] as { role: string; content: string }[][];
    if (Array.isArray(q["involved_classes"])) {
      const tools = (q["involved_classes"] as string[]).flatMap(docsFor);
      const callsByTurn = (truth as string[][]).map((turn) => turn.map((call) => options.parsePythonCall(call, tools)));
      return { kind: "multi", id, turns: turns.map((t) => t.map((m) => m.content).join("\n")), tools, callsByTurn };
    }
    if (!Array.isArray(q["function"])) throw new Error(`${id}: neither "function" nor "involved_classes"`);
    const tools = (q["function"] as Record<string, unknown>[]).map(toToolSpec);
    const possible = (truth as Record<string, Record<string, unknown>>[]).map((call) => {
      const [tool, params] = Object.entries(call)[0] ?? [];
      if (tool === undefined) throw new Error(`${id}: empty ground-truth call`);
      return { tool, params: Object.fromEntries(Object.entries(params ?? {}).map(([k, v]) => [k, Array.isArray(v) ? v : [v]])) };
    });
    const calls = possible.map((p) => ({ tool: p.tool, arguments: groundTruthArguments(p.params, tools.find((t) => t.name === p.tool)?.parameters as JsonSchemaLike | undefined) }));
    return { kind: "single", id, messages: turns.flat(), tools, calls, possible };
  });
}
