/**
 * @module Whether an engine behind a live event stream is really gone.
 *
 * Heartbeats (over NATS) are the router's failure detector: a hard-killed
 * engine pod may leave its HTTP stream open with nobody behind it. But a
 * heartbeat can also lapse while the engine is fine, when the bus itself is
 * disturbed (a NATS node dies and the engine's connection or the engines
 * bucket's leader moves), and cutting the stream then would end a healthy
 * session: the engine reads the closed stream as the client leaving. So a
 * lapse is only a suspicion. The router asks the engine itself (`/healthz`
 * on its pod address, a short timeout) and cuts the stream only if it does
 * not answer; while the heartbeats stay away it keeps asking.
 */
import type { EngineHeartbeat } from "../../common/src/protocol/index.js";
import type { EngineRegistry } from "./engine-registry.js";

/** How long one probe may take. */
export const PROBE_TIMEOUT_MS = 2_000;
/** How often an engine whose heartbeats lapsed is asked again while they stay away. */
export const PROBE_INTERVAL_MS = 1_000;

/**
 * Calls `onLost(reason)` once if `engine`'s heartbeats lapse and it does not
 * answer a probe either. Returns the function that stops watching.
 */
export function watchEngineLiveness(engines: EngineRegistry, engine: EngineHeartbeat, headers: Record<string, string>, onLost: (reason: string) => void): () => void {
  let stopped = false;
  let probing = false;
  const answers = (): Promise<boolean> =>
    fetch(`${engine.endpoint}/healthz`, { headers, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) }).then(
      async (r) => (await r.arrayBuffer(), r.ok),
      () => false,
    );
  const probe = async (reason: string): Promise<void> => {
    while (!stopped) {
      const alive = await answers();
      if (stopped) return;
      if (!alive) {
        stopped = true;
        onLost(`${reason}, and it did not answer on ${engine.endpoint}`);
        return;
      }
      // Heartbeats back: the registry watches again.
      if (engines.find(engine.pool.namespace, engine.pod) !== undefined) return;
      await new Promise((r) => setTimeout(r, PROBE_INTERVAL_MS));
    }
  };
  const stopListening = engines.onGone((pod, reason) => {
    if (pod !== engine.pod || stopped || probing) return;
    probing = true;
    void probe(reason).finally(() => (probing = false));
  });
  return () => {
    stopped = true;
    stopListening();
  };
}
