/**
 * @module Deterministic PRNG for model weights: xoshiro128** seeded through
 * splitmix32, one independent stream per (seed, tensor name). Only integer
 * ops, multiplication and Math.sqrt (correctly rounded everywhere) are used,
 * so every platform produces the same bits; Math.random is never touched.
 */

/** 32-bit FNV-1a hash of a string's UTF-16 code units. */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** xoshiro128** generator. */
export class Prng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  /** Seeds the four state words from splitmix32 over `seed` (any uint32). */
  constructor(seed: number) {
    let x = seed >>> 0;
    const next = (): number => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = next();
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A stream for one named purpose (e.g. a tensor) under a model seed: independent of generation order. */
  static forName(seed: number, name: string): Prng {
    return new Prng((fnv1a32(name) ^ Math.imul(seed >>> 0, 0x9e3779b1)) >>> 0);
  }

  /** Next uint32. */
  nextU32(): number {
    const s1x5 = Math.imul(this.s1, 5);
    const result = Math.imul((s1x5 << 7) | (s1x5 >>> 25), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = (this.s3 << 11) | (this.s3 >>> 21);
    return result;
  }

  /** Uniform in [0, 1) with 24 bits of precision (exact in float32). */
  nextFloat(): number {
    return (this.nextU32() >>> 8) * (1 / 16777216);
  }

  /**
   * Fills `out` with values of mean 0 and standard deviation `std`, uniformly
   * distributed (uniform rather than Gaussian: no log/cos, whose results may
   * differ in the last bit across platforms).
   */
  fillUniform(out: Float32Array, std: number): Float32Array {
    const a = std * Math.sqrt(3);
    for (let i = 0; i < out.length; i++) out[i] = (this.nextFloat() * 2 - 1) * a;
    return out;
  }
}
