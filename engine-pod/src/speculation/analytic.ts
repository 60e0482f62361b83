/**
 * @module The speculative-tool-calls paper's analytic model, as functions.
 *
 * Client-side (§3.1.1), per turn: M generates for G, the draft S for g, the
 * tool runs for T, and S predicts M's call with probability α:
 *   Eq. 1  T_standard = G + T,  T_spec = α·max{G, g + T} + (1 − α)(G + T)
 *   Eq. 2  S_spec = (G + T) / (α·max{G, g + T} + (1 − α)(G + T))
 *
 * Engine-side (§3.2), over K turns with prefill overhead o per request, prefill
 * rate φ (s/token), decode rate δ (s/token), X₁ first-prompt tokens, t_i
 * call tokens, t_o,i tool-output tokens, R_i reasoning tokens, T_i tool time:
 *   Eq. 5  T_cached = 2Ko + φ(X₁ + Σ(t_i + t_o,i)) + δΣ(R_i + t_i) + ΣT_i
 *   Eq. 6  T*_spec  = (1 − α)2Ko + φ(X₁ + Σ(t_i + t_o,i))
 *                    + δ(αK + ΣR_i + (1 − α)Σt_i) + (1 − α)ΣT_i
 */

export interface ClientSideParams {
  /** Draft accuracy, 0..1. */
  alpha: number;
  /** Main model's generation time per turn. */
  G: number;
  /** Draft model's generation time per turn. */
  g: number;
  /** Tool time per turn. */
  T: number;
}

/** Eq. 1: the per-turn times without and with speculation. */
export function clientSideTimes(p: ClientSideParams): { standard: number; spec: number } {
  check(p.alpha, p.G, p.g, p.T);
  const standard = p.G + p.T;
  return { standard, spec: p.alpha * Math.max(p.G, p.g + p.T) + (1 - p.alpha) * standard };
}

/** Eq. 2: the client-side speedup S_spec. */
export function clientSideSpeedup(p: ClientSideParams): number {
  const t = clientSideTimes(p);
  return t.standard / t.spec;
}

/** The fraction of turn time Eq. 2 saves: 1 − 1/S_spec. */
export function clientSideTimeSaved(p: ClientSideParams): number {
  const t = clientSideTimes(p);
  return 1 - t.spec / t.standard;
}

/** One measured turn: the main model's generation G_i, the tool's run T_i, and what its result's entry cost after it. */
export interface MeasuredTurn {
  generationMs: number;
  toolMs: number;
  reentryMs: number;
}

/**
 * Eq. 1 turn by turn on measured turns, plus the session's untouched tail:
 * a hit's turn is max{G_i, g + T_i} then the re-entry, a miss's G_i + T_i +
 * re-entry. Eq. 2 at the mean G and T overstates the gain when G_i and T_i
 * scatter around each other (the mean of a max exceeds the max of means):
 * the first turn's G carries the prompt's prefill, the later ones do not.
 */
export function clientSideTurnsTimeSaved(sessions: readonly { turns: readonly MeasuredTurn[]; tailMs: number }[], alpha: number, g: number): number {
  check(alpha, g);
  let standard = 0;
  let spec = 0;
  for (const s of sessions) {
    // The tail and each re-entry are paid alike with and without speculation.
    standard += s.tailMs;
    spec += s.tailMs;
    for (const x of s.turns) {
      const t = clientSideTimes({ alpha, G: x.generationMs, g, T: x.toolMs });
      standard += t.standard + x.reentryMs;
      spec += t.spec + x.reentryMs;
    }
  }
  return standard <= 0 ? 0 : 1 - spec / standard;
}

/** Lemma 1: the bound at α = 1, (G + T) / max{G, g + T} (< 2). */
export function clientSideMaxSpeedup(p: Omit<ClientSideParams, "alpha">): number {
  return clientSideSpeedup({ ...p, alpha: 1 });
}

/** One agent turn of the engine-side model. */
export interface EngineTurn {
  /** Call tokens t_i. */
  callTokens: number;
  /** Tool-output tokens t_o,i. */
  outputTokens: number;
  /** Reasoning tokens R_i. */
  reasoningTokens: number;
  /** Tool time T_i, seconds (or any unit shared with o, φ, δ). */
  toolTime: number;
}

export interface EngineSideParams {
  alpha: number;
  /** Per-request overhead o (scheduling, eviction, re-admission). */
  overhead: number;
  /** Prefill time per token φ. */
  prefillPerToken: number;
  /** Decode time per token δ. */
  decodePerToken: number;
  /** First prompt tokens X₁. */
  promptTokens: number;
  turns: readonly EngineTurn[];
}

function sums(p: EngineSideParams): { K: number; t: number; to: number; R: number; T: number } {
  const K = p.turns.length;
  let t = 0, to = 0, R = 0, T = 0;
  for (const x of p.turns) {
    t += x.callTokens;
    to += x.outputTokens;
    R += x.reasoningTokens;
    T += x.toolTime;
  }
  return { K, t, to, R, T };
}

/** Eq. 5: prefix-cached inference without speculation. */
export function engineCachedTime(p: Omit<EngineSideParams, "alpha">): number {
  const s = sums({ ...p, alpha: 0 });
  return 2 * s.K * p.overhead + p.prefillPerToken * (p.promptTokens + s.t + s.to) + p.decodePerToken * (s.R + s.t) + s.T;
}

/** Eq. 6: engine-side speculation (O1 + O2 + O3) at accuracy α. */
export function engineSpecTime(p: EngineSideParams): number {
  check(p.alpha, 1, 1, 1);
  const s = sums(p);
  const a = p.alpha;
  return (
    (1 - a) * 2 * s.K * p.overhead +
    p.prefillPerToken * (p.promptTokens + s.t + s.to) +
    p.decodePerToken * (a * s.K + s.R + (1 - a) * s.t) +
    (1 - a) * s.T
  );
}

/**
 * Eq. 6 with Eq. 1's overlap, for engine-side speculation fed by the
 * client-side draft rather than by outputs the client already holds. Eq. 6
 * drops a hit's tool time entirely: it assumes the output is cached before
 * the model asks for it. When the draft starts the tool at the turn start,
 * the output is there only g + T_i later, so a hit's turn is the longer of
 * its engine-side generation (δ(1 + R_i) + φt_i: reasoning, one validation
 * pass, the call's prefill) and g + T_i, then the output's prefill φt_o,i.
 * A miss costs what it costs in Eq. 5. With g + T_i below the generation
 * time this is Eq. 6; it is this repository's composition of the two, not
 * the paper's.
 */
export function engineOverlapSpecTime(p: EngineSideParams & { draftTime: number }): number {
  check(p.alpha, p.draftTime);
  // Every turn a hit: the first prompt's prefill, then each turn's overlap.
  let allHits = p.prefillPerToken * p.promptTokens;
  for (const x of p.turns) {
    const generation = p.decodePerToken * (1 + x.reasoningTokens) + p.prefillPerToken * x.callTokens;
    allHits += Math.max(generation, p.draftTime + x.toolTime) + p.prefillPerToken * x.outputTokens;
  }
  // Every turn a miss is Eq. 5; a turn is a hit with probability α.
  return p.alpha * allHits + (1 - p.alpha) * engineCachedTime(p);
}

/** The fraction of Eq. 5's time {@link engineOverlapSpecTime} saves. */
export function engineOverlapTimeSaved(p: EngineSideParams & { draftTime: number }): number {
  const base = engineCachedTime(p);
  return base <= 0 ? 0 : 1 - engineOverlapSpecTime(p) / base;
}

/** The fraction of Eq. 5's time Eq. 6 saves. */
export function engineSideTimeSaved(p: EngineSideParams): number {
  const base = engineCachedTime(p);
  return base <= 0 ? 0 : 1 - engineSpecTime(p) / base;
}

function check(alpha: number, ...positive: number[]): void {
  if (!(alpha >= 0 && alpha <= 1)) throw new RangeError(`alpha must be in [0, 1], got ${alpha}`);
  for (const x of positive) if (!(x >= 0) || !Number.isFinite(x)) throw new RangeError(`times must be finite and ≥ 0, got ${x}`);
}
