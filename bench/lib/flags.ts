/**
 * @module Command-line flags for the benchmark suites: `--name value`,
 * `--name=value` or a bare `--switch`, checked against the flags a suite
 * declares, so a typo fails at once with the list of flags instead of running
 * a 10-minute benchmark on defaults.
 */
import { parseArgv } from "../../common/src/index.js";

export class BenchFlags {
  private readonly flags: Map<string, string>;

  /** `known`: each flag as its usage line shows it, e.g. `--json FILE`, `--quick`. */
  constructor(argv: readonly string[], known: readonly string[]) {
    this.flags = parseArgv(argv);
    const names = new Set(known.map((k) => k.split(/[ =]/)[0]!.replace(/^--/, "")));
    for (const name of this.flags.keys()) {
      if (!names.has(name)) throw new Error(`unknown flag --${name} (flags: ${known.join(", ")})`);
    }
  }

  has(name: string): boolean {
    return this.flags.has(name);
  }

  str(name: string): string | undefined {
    return this.flags.get(name);
  }

  /** A number flag; `integer` and `min` are checked. */
  num(name: string, fallback: number, opts: { integer?: boolean; min?: number } = {}): number {
    const raw = this.flags.get(name);
    if (raw === undefined) return fallback;
    const v = Number(raw);
    if (!Number.isFinite(v) || (opts.integer === true && !Number.isInteger(v)) || (opts.min !== undefined && v < opts.min)) {
      throw new Error(`--${name} needs ${opts.integer === true ? "an integer" : "a number"}${opts.min !== undefined ? ` ≥ ${opts.min}` : ""}, got "${raw}"`);
    }
    return v;
  }

  /** A comma-separated list of numbers. */
  nums(name: string, fallback: readonly number[], opts: { integer?: boolean; min?: number } = {}): number[] {
    const raw = this.flags.get(name);
    if (raw === undefined) return [...fallback];
    const values = raw.split(",").map(Number);
    if (values.some((v) => !Number.isFinite(v) || (opts.integer === true && !Number.isInteger(v)) || (opts.min !== undefined && v < opts.min))) {
      throw new Error(`--${name} needs a comma-separated list of ${opts.integer === true ? "integers" : "numbers"}${opts.min !== undefined ? ` ≥ ${opts.min}` : ""}, got "${raw}"`);
    }
    return values;
  }
}
