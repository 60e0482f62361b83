/**
 * @module Validation of a session request's `speculation` field (the
 * AgentApp's settings the router copies, or a client's own): each failure
 * names the field and what was expected.
 */
import { ErrorCode, type ScriptedPolicySpec, type SessionSpeculation } from "../../../common/src/index.js";
import { HttpError } from "./http-errors.js";

const bad = (message: string): HttpError => HttpError.of(ErrorCode.BadRequest, message);
const FIELDS = ["enabled", "lambda", "maxInFlight", "pools", "engineSide", "draft"];
const POOL = /^[a-z0-9][a-z0-9-]{0,62}\/[a-z0-9][a-z0-9-]{0,62}$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function intIn(v: unknown, field: string, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < min || v > max) throw bad(`"${field}" must be an integer in ${min}..${max}, got ${JSON.stringify(v)}`);
  return v;
}

/** `speculation` → a SessionSpeculation; a scripted draft needs a scripted main policy. */
export function validateSpeculation(value: unknown, policy: ScriptedPolicySpec | undefined): SessionSpeculation | undefined {
  if (value === undefined) return undefined;
  if (!isObject(value)) throw bad(`"speculation" must be an object with ${FIELDS.join(", ")}`);
  for (const k of Object.keys(value)) if (!FIELDS.includes(k)) throw bad(`unknown field "speculation.${k}"; expected ${FIELDS.join(", ")}`);
  if (typeof value["enabled"] !== "boolean") throw bad(`"speculation.enabled" must be true or false`);
  const out: SessionSpeculation = { enabled: value["enabled"] };
  const lambda = intIn(value["lambda"], "speculation.lambda", 1, 16);
  if (lambda !== undefined) out.lambda = lambda;
  const maxInFlight = intIn(value["maxInFlight"], "speculation.maxInFlight", 1, 64);
  if (maxInFlight !== undefined) out.maxInFlight = maxInFlight;
  if (value["engineSide"] !== undefined) {
    if (typeof value["engineSide"] !== "boolean") throw bad(`"speculation.engineSide" must be true or false`);
    out.engineSide = value["engineSide"];
  }
  const pools = value["pools"];
  if (pools !== undefined) {
    if (!Array.isArray(pools) || pools.some((p) => typeof p !== "string" || !POOL.test(p))) throw bad(`"speculation.pools" must be an array of "namespace/name" ToolPool names`);
    out.pools = pools as string[];
  }
  const draft = value["draft"];
  if (isObject(draft) && draft["type"] === "model") {
    for (const k of Object.keys(draft)) if (k !== "type" && k !== "maxTokens") throw bad(`unknown field "speculation.draft.${k}"; expected type, maxTokens`);
    const maxTokens = intIn(draft["maxTokens"], "speculation.draft.maxTokens", 8, 512);
    out.draft = { type: "model", ...(maxTokens !== undefined ? { maxTokens } : {}) };
  } else if (draft !== undefined) {
    if (!isObject(draft) || draft["type"] !== "scripted") throw bad(`"speculation.draft" must be {"type": "model", "maxTokens"?} or {"type": "scripted", "alpha": 0..1, "seed"?}`);
    const alpha = draft["alpha"];
    if (typeof alpha !== "number" || !(alpha >= 0 && alpha <= 1)) throw bad(`"speculation.draft.alpha" must be a number in 0..1, got ${JSON.stringify(alpha)}`);
    const seed = intIn(draft["seed"], "speculation.draft.seed", 0, 0xffffffff);
    if (policy === undefined || policy.type !== "lpt-dag") throw bad(`a scripted draft ("speculation.draft") needs a scripted "lpt-dag" policy: it predicts the script's next call`);
    out.draft = { type: "scripted", alpha, ...(seed !== undefined ? { seed } : {}) };
  }
  return out;
}
