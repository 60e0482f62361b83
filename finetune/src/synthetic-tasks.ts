/**
 * @module Synthetic training tasks: requests written from the function
 * families (synthetic-families.ts), each with the calls that answer it. They
 * add what 200 tuning entries cannot: many distinct function and parameter
 * spellings, so the model learns to read a schema and copy each value the
 * request spells out into the parameter it belongs to, to leave out an
 * optional parameter the request does not mention, to respell a value as the
 * parameter's description asks ("4.5%" as 0.045, "Denver" as "Denver, CO"),
 * to pick the one function
 * that fits among others, and to make one call per item when a request asks
 * about several (the missing-call and wrong-argument failures of the
 * accuracy bench). No BFCL entry is behind them.
 * - `single`: one function, one call;
 * - `multiple`: the same with two to four other functions offered;
 * - `parallel`: one function, two to four calls (one argument varies, or each
 *   call has its own set of values);
 * - `parallel-multiple`: two functions, one call each.
 */
import type { ScriptedCall, ToolSpec } from "../../common/src/index.js";
import { bfclToJsonSchema } from "../../bench/bfcl/bfcl-schema.js";
import { mulberry32 } from "../../bench/bfcl/seeded-random.js";
import type { TrainingTask } from "./build-samples.js";
import { FAMILIES, type DrawnValue, type FunctionFamily, type ParamSpec } from "./synthetic-families.js";
import type { Rng } from "./simulate.js";

export type SyntheticKind = "single" | "multiple" | "parallel" | "parallel-multiple";

/** How the kinds are mixed: parallel ones weigh most, as they are where the model fails most. */
const KIND_WEIGHTS: readonly [SyntheticKind, number][] = [
  ["single", 0.25],
  ["multiple", 0.25],
  ["parallel", 0.35],
  ["parallel-multiple", 0.15],
];

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
const listed = (xs: readonly string[]): string => (xs.length === 1 ? xs[0]! : `${xs.slice(0, -1).join(", ")} and ${xs.at(-1)}`);

/** One family spelled one way for one task: the function's name and each parameter's. */
interface Spelling {
  family: FunctionFamily;
  name: string;
  paramNames: string[];
}

function spell(family: FunctionFamily, rng: Rng): Spelling {
  return { family, name: pick(rng, family.names), paramNames: family.params.map((p) => pick(rng, p.names)) };
}

function toolSpec(s: Spelling): ToolSpec {
  const properties: Record<string, unknown> = {};
  s.family.params.forEach((p, i) => {
    properties[s.paramNames[i]!] = { type: p.type, description: p.description, ...(p.enum !== undefined ? { enum: [...p.enum] } : {}), ...(p.items !== undefined ? { items: { type: p.items } } : {}) };
  });
  const required = s.family.params.flatMap((p, i) => (p.optional === true ? [] : [s.paramNames[i]!]));
  return { name: s.name, description: s.family.description, parameters: bfclToJsonSchema({ type: "dict", properties, required }) };
}

/** Values for each parameter the request mentions (every required one; an optional one sometimes), distinct in their text where the pool allows. */
function drawValues(family: FunctionFamily, rng: Rng, taken: Set<string>): (DrawnValue | undefined)[] {
  return family.params.map((p) => {
    if (p.optional === true && rng() >= 0.35) return undefined;
    let v = p.draw(rng);
    for (let tries = 0; tries < 20 && taken.has(v.text); tries++) v = p.draw(rng);
    taken.add(v.text);
    // A small pool (seven planets) can run out over four calls: a required value repeats then.
    return v;
  });
}

function phrase(p: ParamSpec, text: string, rng: Rng): string {
  return pick(rng, p.phrases).replace("{v}", text);
}

function argumentsOf(s: Spelling, values: readonly (DrawnValue | undefined)[]): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  values.forEach((v, i) => {
    if (v !== undefined) args[s.paramNames[i]!] = v.arg;
  });
  return args;
}

/** An opening and the argument phrases, as one clause without its end mark. */
function clause(s: Spelling, values: readonly (DrawnValue | undefined)[], rng: Rng, ask = pick(rng, s.family.asks)): string {
  const parts = s.family.params.flatMap((p, i) => (values[i] === undefined ? [] : [phrase(p, values[i]!.text, rng)]));
  return `${ask} ${parts.join(" ")}`;
}

const endMark = (sentence: string): string => (/^(what|how|is|who|which|when|where)\b/i.test(sentence) ? "?" : ".");
const lowerFirst = (s: string): string => (/^[A-Z][a-z]/.test(s) ? s[0]!.toLowerCase() + s.slice(1) : s);

function call(id: string, s: Spelling, args: Record<string, unknown>): ScriptedCall {
  return { id, tool: s.name, arguments: args, dependsOn: [] };
}

/** Families other than those of `used`, in a random order. */
function others(used: readonly FunctionFamily[], rng: Rng, n: number): FunctionFamily[] {
  const pool = FAMILIES.filter((f) => !used.includes(f));
  const out: FunctionFamily[] = [];
  while (out.length < n && pool.length > 0) out.push(pool.splice(Math.floor(rng() * pool.length), 1)[0]!);
  return out;
}

function shuffled<T>(xs: readonly T[], rng: Rng): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** One call's request, with `distractors` other functions offered beside it. */
function singleTask(rng: Rng, distractors: number): { question: string; tools: ToolSpec[]; calls: ScriptedCall[] } {
  const s = spell(pick(rng, FAMILIES), rng);
  const values = drawValues(s.family, rng, new Set());
  const text = clause(s, values, rng);
  const tools = [toolSpec(s), ...others([s.family], rng, distractors).map((f) => toolSpec(spell(f, rng)))];
  return { question: text + endMark(text), tools: shuffled(tools, rng), calls: [call("c0", s, argumentsOf(s, values))] };
}

/**
 * Two to four calls of one function: one argument listed ("in Kyoto, Perth
 * and Accra", the others shared) or, for half, each call's own values in
 * turn ("…: first …, then …").
 */
function parallelTask(rng: Rng): { question: string; tools: ToolSpec[]; calls: ScriptedCall[] } {
  const s = spell(pick(rng, FAMILIES), rng);
  const count = 2 + Math.floor(rng() * 3);
  const taken = new Set<string>();
  const shared = drawValues(s.family, rng, taken);
  const varying = s.family.params.flatMap((p, i) => (p.optional !== true && p.type !== "boolean" && p.type !== "array" ? [i] : []));
  if (rng() < 0.5 && varying.length > 0) {
    const vi = pick(rng, varying);
    const values: DrawnValue[] = [shared[vi]!];
    // Distinct as written and as passed ("Denver" and "Denver, Colorado" are one call).
    const args = new Set([JSON.stringify(shared[vi]!.arg)]);
    for (let tries = 0; values.length < count && tries < 40; tries++) {
      const v = s.family.params[vi]!.draw(rng);
      if (!taken.has(v.text) && !args.has(JSON.stringify(v.arg))) {
        taken.add(v.text);
        args.add(JSON.stringify(v.arg));
        values.push(v);
      }
    }
    const listedValues = shared.map((v, i) => (i === vi ? { arg: undefined, text: listed(values.map((x) => x.text)) } : v));
    const text = clause(s, listedValues, rng);
    const calls = values.map((v, c) => call(`c${c}`, s, argumentsOf(s, shared.map((x, i) => (i === vi ? v : x)))));
    return { question: text + endMark(text), tools: [toolSpec(s)], calls };
  }
  const sets = [shared];
  const seen = new Set([JSON.stringify(shared.map((v) => v?.arg))]);
  for (let tries = 0; sets.length < count && tries < 40; tries++) {
    const next = drawValues(s.family, rng, taken);
    const key = JSON.stringify(next.map((v) => v?.arg));
    if (seen.has(key)) continue;
    seen.add(key);
    sets.push(next);
  }
  const ask = pick(rng, s.family.asks);
  const ordinals = ["first", "then", "then", "and finally"];
  const parts = sets.map((vals, c) => {
    const body = clause(s, vals, rng, "").trim();
    return c === 0 ? body : `${c === sets.length - 1 ? "and finally" : ordinals[c]} ${body}`;
  });
  const question = `${ask} for each of these: ${parts.join("; ")}.`;
  return { question, tools: [toolSpec(s)], calls: sets.map((vals, c) => call(`c${c}`, s, argumentsOf(s, vals))) };
}

/** Two functions in one request, one call each. */
function parallelMultipleTask(rng: Rng): { question: string; tools: ToolSpec[]; calls: ScriptedCall[] } {
  const [fa, fb] = others([], rng, 2) as [FunctionFamily, FunctionFamily];
  const a = spell(fa, rng);
  const b = spell(fb, rng);
  const taken = new Set<string>();
  const va = drawValues(fa, rng, taken);
  const vb = drawValues(fb, rng, taken);
  const first = clause(a, va, rng);
  const second = clause(b, vb, rng);
  const question = `${first}, and also ${lowerFirst(second)}${endMark(second)}`;
  return { question, tools: shuffled([toolSpec(a), toolSpec(b)], rng), calls: [call("c0", a, argumentsOf(a, va)), call("c1", b, argumentsOf(b, vb))] };
}

function kindOf(rng: Rng): SyntheticKind {
  let r = rng();
  for (const [kind, w] of KIND_WEIGHTS) {
    if (r < w) return kind;
    r -= w;
  }
  return "single";
}

/** `count` synthetic tasks drawn with `seed`. */
export function syntheticTasks(count: number, seed: number): TrainingTask[] {
  const rng = mulberry32(seed * 7919 + 13);
  const tasks: TrainingTask[] = [];
  for (let i = 0; i < count; i++) {
    const kind = kindOf(rng);
    const t = kind === "single" ? singleTask(rng, 0) : kind === "multiple" ? singleTask(rng, 2 + Math.floor(rng() * 3)) : kind === "parallel" ? parallelTask(rng) : parallelMultipleTask(rng);
    tasks.push({ id: `synthetic-${kind}-${i}`, origin: `synthetic-${kind}`, sources: [], messages: [{ role: "user", content: t.question }], tools: t.tools, calls: t.calls });
  }
  return tasks;
}
