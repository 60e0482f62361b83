/**
 * @module The scripted draft policy (benchmarks and tests): the draft model S
 * predicts the ground-truth next call with a set accuracy α, and a plausible
 * wrong call otherwise — the same tool with one argument perturbed, or
 * another speculative tool when the call has nothing to perturb. Which call
 * is predicted is decided here; the draft's tokens are still real forward
 * passes of the draft model (see `draft-model.ts`), and sessions that use it
 * are labelled scripted, like the main policy.
 *
 * The decision is a pure function of (seed, session, turn, λ-sample), so
 * every mode of a benchmark run sees the same predictions.
 */
import type { ToolSpec } from "../../../common/src/index.js";
import { fnv1a32, Prng } from "../model/prng.js";
import type { PredictedCall } from "./planner.js";

export interface ScriptedDraftOptions {
  /** Probability that a prediction is the ground-truth call. */
  alpha: number;
  seed: number;
}

/**
 * Predicts `lambda` calls for one turn whose true next call is `truth`.
 * Sample i is correct with probability α (independently); a wrong one is
 * {@link plausibleWrongCall}. Duplicates are kept (the planner skips cached ones).
 */
export function scriptedPredictions(
  truth: PredictedCall,
  tools: readonly ToolSpec[],
  lambda: number,
  opts: ScriptedDraftOptions & { sessionKey: string; turn: number },
): PredictedCall[] {
  if (!(opts.alpha >= 0 && opts.alpha <= 1)) throw new RangeError(`alpha must be in [0, 1], got ${opts.alpha}`);
  const out: PredictedCall[] = [];
  for (let i = 0; i < lambda; i++) {
    const rng = Prng.forName(opts.seed, `${opts.sessionKey}/${opts.turn}/${i}`);
    out.push(rng.nextFloat() < opts.alpha ? truth : plausibleWrongCall(truth, tools, rng));
  }
  return out;
}

/** A call that is close to `truth` but not equal to it. */
export function plausibleWrongCall(truth: PredictedCall, tools: readonly ToolSpec[], rng: Prng): PredictedCall {
  const keys = Object.keys(truth.arguments);
  const others = tools.filter((t) => t.name !== truth.tool && t.speculative === true);
  // Mostly the same tool with a perturbed argument (the common draft error), else another tool.
  if (keys.length > 0 && (others.length === 0 || rng.nextFloat() < 0.7)) {
    const key = keys[rng.nextU32() % keys.length]!;
    return { tool: truth.tool, arguments: { ...truth.arguments, [key]: perturb(truth.arguments[key], rng) } };
  }
  if (others.length > 0) {
    const other = others[rng.nextU32() % others.length]!;
    return { tool: other.name, arguments: minimalArguments(other) };
  }
  // Nothing to perturb and no other tool: an extra argument makes it differ.
  return { tool: truth.tool, arguments: { ...truth.arguments, _draft: rng.nextU32() % 100 } };
}

/** A different value of the same JSON type. */
export function perturb(value: unknown, rng: Prng): unknown {
  if (typeof value === "number") return Number.isInteger(value) ? value + 1 + (rng.nextU32() % 9) : Math.round((value + 0.5 + rng.nextFloat()) * 100) / 100;
  if (typeof value === "string") return value === "" ? "x" : `${value}${value.length % 2 === 0 ? "s" : "e"}`;
  if (typeof value === "boolean") return !value;
  if (Array.isArray(value)) return value.length > 0 ? value.slice(0, -1) : [0];
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 0) return { x: 1 };
    const k = keys[rng.nextU32() % keys.length]!;
    return { ...(value as Record<string, unknown>), [k]: perturb((value as Record<string, unknown>)[k], rng) };
  }
  return 0;
}

/** Required arguments filled with a value of their declared type (a draft's guess at another tool). */
export function minimalArguments(spec: ToolSpec): Record<string, unknown> {
  const props = (spec.parameters["properties"] ?? {}) as Record<string, { type?: unknown; enum?: unknown[] }>;
  const required = Array.isArray(spec.parameters["required"]) ? (spec.parameters["required"] as string[]) : [];
  const out: Record<string, unknown> = {};
  for (const name of required) {
    const p = props[name] ?? {};
    if (Array.isArray(p.enum) && p.enum.length > 0) out[name] = p.enum[0];
    else out[name] = sampleOfType(Array.isArray(p.type) ? p.type[0] : p.type);
  }
  return out;
}

function sampleOfType(type: unknown): unknown {
  switch (type) {
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return true;
    case "array":
      return [];
    case "object":
      return {};
    default:
      return "a";
  }
}

/** A stable key for a session's predictions (seeded per session id or benchmark task). */
export function sessionKey(id: string): string {
  return String(fnv1a32(id));
}
