/**
 * @module One prefix warm at a time per engine (`Engine.warmPrefix`): a warm
 * prefills a whole shared prefix on the engine's threads, so a second one
 * for another prefix is refused as busy, while a second ask for the prefix
 * being warmed (two router replicas deciding the same warm) joins the
 * running one and reads `held`: the prefix is there once it ends.
 */
import type { OfferedPrefix } from "../scheduler/index.js";
import type { PrefixWarmResult } from "./engine-api.js";

export class OneWarmAtATime {
  private running: { key: string; done: Promise<PrefixWarmResult> } | undefined;

  run(prefix: OfferedPrefix, warm: () => Promise<PrefixWarmResult>): Promise<PrefixWarmResult> {
    const key = prefix.tokens.join(",");
    const running = this.running;
    if (running !== undefined) {
      if (running.key === key) return running.done.then((r) => (r.outcome === "warmed" ? { ...r, outcome: "held", prefilledTokens: 0 } : r));
      return Promise.resolve({ outcome: "busy", tokens: prefix.tokens.length, hashes: [...prefix.hashes], prefilledTokens: 0, reason: "another prefix warm is running" });
    }
    const done = warm().finally(() => {
      if (this.running?.done === done) this.running = undefined;
    });
    this.running = { key, done };
    return done;
  }
}
