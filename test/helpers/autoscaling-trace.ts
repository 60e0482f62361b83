/**
 * Recorded autoscaler signal traces (`test/fixtures/autoscaling/*.json`): an
 * app's SLO, its pools' bounds and the samples the scaler read, tick by tick.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import type { AppSlo } from "../../operator/src/api/index.js";
import type { ScaledPool, ScaledToolPool, SignalSample } from "../../operator/src/autoscaling/index.js";

export interface AutoscalingTrace {
  description: string;
  slo?: AppSlo;
  enginePool?: ScaledPool;
  toolPools: ScaledToolPool[];
  samples: SignalSample[];
}

/** The fixture `name` (without `.json`). */
export function autoscalingTrace(name: string): AutoscalingTrace {
  return JSON.parse(readFileSync(path.join(import.meta.dirname, "../fixtures/autoscaling", `${name}.json`), "utf8")) as AutoscalingTrace;
}
