/**
 * @module The engine-side half of speculation (O2, O3) as the engine core's
 * {@link SpeculationHook}: each session's speculator answers, unless the
 * session turned engine-side speculation off.
 */
import type { SpeculationHook } from "../engine/index.js";
import type { SpeculativeExecutor } from "./speculative-executor.js";

export function createSpeculationHook(executor: SpeculativeExecutor, maxDraftTokens: number): SpeculationHook {
  const engineSide = (id: string) => {
    const sp = executor.speculator(id);
    return sp !== undefined && sp.engineSide ? sp : undefined;
  };
  return {
    maxDraftTokens,
    draftBody: (id) => engineSide(id)?.draftCall()?.body,
    validated: (id, proposed, accepted) => executor.speculator(id)?.recordValidation(proposed, accepted),
    settledResult: (id, call) => {
      const r = engineSide(id)?.settledHit(call.tool, call.arguments);
      return r === undefined ? undefined : { ok: r.ok, output: r.output };
    },
  };
}
