/**
 * @module The scripted calls of a bench task: `calls` runs of the `sleep`
 * tool in a chain (each after the one before), `toolMs` each, answering
 * `r<k>`, with that time as the model's estimate.
 */
import type { ScriptedCall } from "../../common/src/index.js";

export function sleepChain(calls: number, toolMs: number): ScriptedCall[] {
  return Array.from({ length: calls }, (_, k) => ({
    id: `c${k}`,
    tool: "sleep",
    arguments: { ms: toolMs, result: `r${k}` },
    dependsOn: k === 0 ? [] : [`c${k - 1}`],
    estimatedLatencyMs: toolMs,
  }));
}
