/**
 * @module Scripted policies (tests and benchmarks): the contract and the
 * factory from a `ScriptedPolicySpec`.
 */
import type { ScriptedPolicySpec } from "../../../common/src/index.js";
import { LptDagPolicy } from "./lpt-dag-policy.js";
import type { PolicyTokenizer, TokenPolicy } from "./policy.js";
import { TextPolicy } from "./text-policy.js";

export type { PolicyStep, PolicyTokenizer, PolicyView, TokenPolicy } from "./policy.js";
export { LptDagPolicy } from "./lpt-dag-policy.js";
export { TextPolicy } from "./text-policy.js";
export { formatCallBody } from "./call-format.js";
export { scanTranscript } from "./transcript.js";

/** A fresh policy for one session or completion. */
export function createPolicy(spec: ScriptedPolicySpec, tok: PolicyTokenizer): TokenPolicy {
  switch (spec.type) {
    case "lpt-dag":
      return new LptDagPolicy(spec, tok);
    case "text":
      return new TextPolicy(spec.pieces, tok);
  }
}
