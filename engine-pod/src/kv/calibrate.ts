/**
 * @module Calibrating the trap handler's cost model on the loaded model: a
 * short measurement at engine start (prefill at a few chunk sizes, a few
 * decode steps, save and load of the state at each size) fitted into a
 * `CostModel`.
 */
import { unlink } from "node:fs/promises";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import type { LlamaContextSequence, LlamaModel, Token } from "node-llama-cpp";
import type { CostModel } from "./cost-model.js";

export interface CalibrateOptions {
  /** Directory for the state files (a tmpfs). */
  swapDir: string;
  /** Prefill chunk sizes; three or more let the fit see the quadratic term. Default [32, 192, 512]. */
  sizes?: number[];
  /** Decode steps timed. Default 8. */
  decodeSteps?: number;
  /** Tokens to evaluate; default: the model's tokenization of a filler text. */
  tokens?: readonly Token[];
}

/**
 * Measures the loaded model on `sequence` (a free one; it is left empty) and
 * returns the fitted cost model. Takes well under a second on the test model
 * and a few seconds on a 10–30 ms/token model.
 */
export async function calibrateCostModel(sequence: LlamaContextSequence, options: CalibrateOptions): Promise<CostModel> {
  const started = performance.now();
  const sizes = [...(options.sizes ?? [32, 192, 512])].sort((a, b) => a - b).filter((n) => n > 0 && n < sequence.contextSize);
  if (sizes.length === 0) throw new Error("calibration needs at least one chunk size below the context size");
  const largest = sizes[sizes.length - 1] ?? 1;
  const tokens = options.tokens ?? fillerTokens(sequence.model, largest + 16);
  if (tokens.length < largest + 1) throw new Error(`calibration needs ${largest + 1} tokens, got ${tokens.length}`);

  if (sequence.nextTokenIndex > 0) await sequence.clearHistory();
  // Warm-up: the first evaluation allocates compute buffers.
  await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(0, 8));
  await sequence.clearHistory();

  const prefill: Point[] = [];
  const save: Point[] = [];
  const load: Point[] = [];
  const bytes: Point[] = [];
  for (const n of sizes) {
    const t0 = performance.now();
    await sequence.evaluateWithoutGeneratingNewTokens(tokens.slice(0, n));
    prefill.push({ x: n, y: performance.now() - t0 });
    const file = join(options.swapDir, `calibrate-${randomUUID()}.kv`);
    try {
      // Best of two: save and load are short and easily disturbed by a busy machine.
      let saveMs = Infinity;
      let loadMs = Infinity;
      let size = 0;
      for (let rep = 0; rep < 2; rep++) {
        const s0 = performance.now();
        size = (await sequence.saveStateToFile(file)).fileSize;
        saveMs = Math.min(saveMs, performance.now() - s0);
        await sequence.clearHistory();
        const l0 = performance.now();
        await sequence.loadStateFromFile(file, { acceptRisk: true });
        loadMs = Math.min(loadMs, performance.now() - l0);
      }
      save.push({ x: size, y: saveMs });
      load.push({ x: size, y: loadMs });
      bytes.push({ x: n, y: size });
    } finally {
      await unlink(file).catch(() => undefined);
    }
    await sequence.clearHistory();
  }

  const decodeMsPerToken = await measureDecode(sequence, tokens, options.decodeSteps ?? 8);
  await sequence.clearHistory();

  const prefillFit = fitPrefill(prefill);
  const bytesFit = fitLine(bytes);
  const saveFit = fitBandwidth(save);
  const loadFit = fitBandwidth(load);
  const last = prefill[prefill.length - 1] ?? { x: 1, y: 1 };
  return {
    ...prefillFit,
    prefillTokensPerS: (last.x / Math.max(last.y, 1e-3)) * 1000,
    decodeMsPerToken,
    stateBytesPerToken: Math.max(bytesFit.slope, 0),
    stateBytesFixed: Math.max(bytesFit.intercept, 0),
    theoreticalStateBytesPerToken: theoreticalStateBytesPerToken(sequence),
    saveFixedMs: saveFit.fixedMs,
    saveBytesPerMs: saveFit.bytesPerMs,
    loadFixedMs: loadFit.fixedMs,
    loadBytesPerMs: loadFit.bytesPerMs,
    source: "measured",
    calibratedAt: new Date().toISOString(),
    calibrationMs: performance.now() - started,
    samples: prefill.map((p, i) => ({
      tokens: p.x,
      prefillMs: p.y,
      stateBytes: bytes[i]?.y ?? 0,
      saveMs: save[i]?.y ?? 0,
      loadMs: load[i]?.y ?? 0,
    })),
  };
}

/** KV bytes per token from the model's shape: 2 (K and V) · n_layer · n_embd_kv · bytes per element. */
export function theoreticalStateBytesPerToken(sequence: LlamaContextSequence): number | null {
  const metadata = sequence.model.fileInfo.metadata as unknown as Record<string, unknown>;
  const general = metadata["general"] as { architecture?: string } | undefined;
  const arch = general?.architecture === undefined ? undefined : (metadata[general.architecture] as ArchMetadata | undefined);
  if (arch?.block_count === undefined || arch.embedding_length === undefined) return null;
  const heads = firstNumber(arch.attention?.head_count) ?? 1;
  const kvHeads = firstNumber(arch.attention?.head_count_kv) ?? heads;
  const headDim = arch.attention?.key_length ?? arch.embedding_length / heads;
  const nEmbdKv = headDim * kvHeads;
  return 2 * arch.block_count * nEmbdKv * bytesPerElement(sequence.context.kvCacheKeyType);
}

interface ArchMetadata {
  block_count?: number;
  embedding_length?: number;
  attention?: { head_count?: number | number[]; head_count_kv?: number | number[]; key_length?: number };
}

function firstNumber(value: number | number[] | undefined): number | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Bytes per KV element by ggml type id (F32 0, F16 1, Q8_0 8, BF16 30); llama.cpp's default is F16. */
function bytesPerElement(type: number | undefined): number {
  switch (type) {
    case 0:
      return 4;
    case 8:
      return 34 / 32;
    case undefined: // not in the metadata: llama.cpp's default, F16
    default: // F16, BF16 and anything else 2 bytes wide
      return 2;
  }
}

function fillerTokens(model: LlamaModel, count: number): Token[] {
  const text =
    "The engine keeps decoding while tools run, and each result arrives as an interrupt in the live token stream. ";
  const out: Token[] = [];
  while (out.length < count) out.push(...model.tokenize(text));
  return out.slice(0, count);
}

async function measureDecode(sequence: LlamaContextSequence, tokens: readonly Token[], steps: number): Promise<number> {
  const gaps: number[] = [];
  let last = 0;
  let seen = 0;
  for await (const token of sequence.evaluate(tokens.slice(0, 16))) {
    void token;
    const now = performance.now();
    if (seen > 0) gaps.push(now - last);
    last = now;
    if (++seen > steps) break;
  }
  return median(gaps);
}

interface Point {
  x: number;
  y: number;
}

/** Median of a list (0 for an empty one). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Least-squares line y = intercept + slope·x. */
export function fitLine(points: readonly Point[]): { intercept: number; slope: number } {
  const n = points.length;
  if (n === 0) return { intercept: 0, slope: 0 };
  const only = points[0];
  if (n === 1 && only !== undefined) return { intercept: 0, slope: only.x === 0 ? 0 : only.y / only.x };
  const mx = points.reduce((s, p) => s + p.x, 0) / n;
  const my = points.reduce((s, p) => s + p.y, 0) / n;
  const sxx = points.reduce((s, p) => s + (p.x - mx) ** 2, 0);
  const sxy = points.reduce((s, p) => s + (p.x - mx) * (p.y - my), 0);
  const slope = sxx === 0 ? 0 : sxy / sxx;
  return { intercept: my - slope * mx, slope };
}

/**
 * Prefill time p0 + p1·n + p2·n² by non-negative least squares: every subset
 * of the three terms is solved by ordinary least squares and the best fit
 * whose coefficients are all ≥ 0 wins (noise must never predict free or
 * shrinking prefill). At most n−1 terms for n points; three sizes can show
 * either a fixed cost or a quadratic term, four can show both.
 */
export function fitPrefill(points: readonly Point[]): Pick<CostModel, "prefillFixedMs" | "prefillMsPerToken" | "prefillMsPerTokenSq"> {
  const basis = [(_n: number) => 1, (n: number) => n, (n: number) => n * n];
  let best: { coef: number[]; residual: number; terms: number } | undefined;
  // The per-token term is always in (prefill is never free per token); the
  // fixed and quadratic terms join when the points support them.
  for (const mask of [0b010, 0b011, 0b110, 0b111]) {
    const terms = [0, 1, 2].filter((k) => (mask >> k) & 1);
    // Keep a degree of freedom: three points fitted exactly by three terms
    // would turn measurement noise into a curvature that explodes at 2k tokens.
    if (terms.length > Math.max(1, points.length - 1)) continue;
    const solved = leastSquares(points.map((p) => terms.map((k) => (basis[k] as (n: number) => number)(p.x))), points.map((p) => p.y));
    if (solved === undefined || solved.some((c) => !(c >= 0))) continue;
    const coef = [0, 0, 0];
    terms.forEach((k, i) => (coef[k] = solved[i] ?? 0));
    const residual = points.reduce((sum, p) => sum + (p.y - (coef[0] ?? 0) - (coef[1] ?? 0) * p.x - (coef[2] ?? 0) * p.x * p.x) ** 2, 0);
    // Masks come in growing order: a larger model must halve the residual to win.
    if (best === undefined || residual < best.residual * (terms.length > best.terms ? 0.5 : 1)) best = { coef, residual, terms: terms.length };
  }
  if (best === undefined) {
    const last = points[points.length - 1] ?? { x: 1, y: 1 };
    return { prefillFixedMs: 0, prefillMsPerToken: last.y / last.x, prefillMsPerTokenSq: 0 };
  }
  return { prefillFixedMs: best.coef[0] ?? 0, prefillMsPerToken: best.coef[1] ?? 0, prefillMsPerTokenSq: best.coef[2] ?? 0 };
}

/** Solves min ‖A·c − y‖² through the normal equations (tiny systems); undefined when singular. */
function leastSquares(a: readonly number[][], y: readonly number[]): number[] | undefined {
  const k = a[0]?.length ?? 0;
  // Normal equations M·c = v with M = AᵀA, v = Aᵀy, as an augmented matrix.
  const m: number[][] = Array.from({ length: k }, (_, i) =>
    [...Array.from({ length: k }, (_, j) => a.reduce((s, row) => s + (row[i] ?? 0) * (row[j] ?? 0), 0)), a.reduce((s, row, r) => s + (row[i] ?? 0) * (y[r] ?? 0), 0)],
  );
  for (let col = 0; col < k; col++) {
    let pivot = col;
    for (let r = col + 1; r < k; r++) if (Math.abs(m[r]?.[col] ?? 0) > Math.abs(m[pivot]?.[col] ?? 0)) pivot = r;
    const pivotRow = m[pivot] as number[];
    if (Math.abs(pivotRow[col] ?? 0) < 1e-12) return undefined;
    [m[col], m[pivot]] = [pivotRow, m[col] as number[]];
    const row = m[col] as number[];
    for (let r = 0; r < k; r++) {
      if (r === col) continue;
      const other = m[r] as number[];
      const f = (other[col] ?? 0) / (row[col] ?? 1);
      for (let c = col; c <= k; c++) other[c] = (other[c] ?? 0) - f * (row[c] ?? 0);
    }
  }
  return m.map((row, i) => (row[k] ?? 0) / (row[i] ?? 1));
}

/** Time = fixedMs + bytes / bytesPerMs from (bytes, ms) points, robust to noise. */
function fitBandwidth(points: readonly Point[]): { fixedMs: number; bytesPerMs: number } {
  const line = fitLine(points);
  if (line.slope > 0) return { fixedMs: Math.max(line.intercept, 0), bytesPerMs: 1 / line.slope };
  const last = points[points.length - 1] ?? { x: 1, y: 1 };
  return { fixedMs: 0, bytesPerMs: last.x / Math.max(last.y, 1e-3) };
}
