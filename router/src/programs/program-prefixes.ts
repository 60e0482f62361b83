/**
 * @module Program prefixes the router has had filled on each engine: the
 * hashes of program prompts cut at variable boundaries, which engine
 * heartbeats do not carry (an engine hashes at message boundaries). An
 * entry is kept for a while after its request filled it — the engine keeps
 * a finished sequence resident as prefix cache until its slot is needed —
 * and placement treats it like a resident prefix, so requests of the same
 * program, and of later programs of the app, that share the prefix go where
 * it is and fork it instead of filling it again. A stale entry costs only a
 * placement choice: the engine forks on its actual tokens.
 */
export class ProgramPrefixes {
  private readonly byPod = new Map<string, Map<string, number>>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  record(pod: string, chain: readonly string[]): void {
    const m = this.byPod.get(pod) ?? new Map<string, number>();
    const at = this.now();
    for (const h of chain) m.set(h, at);
    this.byPod.set(pod, m);
  }

  /** Hashes recorded on `pod` within the TTL (older ones are dropped). */
  known(pod: string): Set<string> {
    const m = this.byPod.get(pod);
    if (m === undefined) return new Set();
    const limit = this.now() - this.ttlMs;
    for (const [h, at] of m) if (at < limit) m.delete(h);
    return new Set(m.keys());
  }

  forget(pod: string): void {
    this.byPod.delete(pod);
  }
}
