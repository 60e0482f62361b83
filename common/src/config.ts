/**
 * @module Config helpers: each process has one options schema parsed once at
 * start-up from flags (`--name=value` / `--name value`) over environment
 * variables over defaults. Invalid values stop the process with a clear message.
 */
import { InterlaceError, ErrorCode } from "./errors.js";

export type Source = { flags: Map<string, string>; env: NodeJS.ProcessEnv };

export function parseArgv(argv: readonly string[]): Map<string, string> {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) continue;
    const eq = arg.indexOf("=");
    if (eq > 0) flags.set(arg.slice(2, eq), arg.slice(eq + 1));
    else {
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith("--")) {
        flags.set(arg.slice(2), next);
        i++;
      } else flags.set(arg.slice(2), "true");
    }
  }
  return flags;
}

export function defaultSource(): Source {
  return { flags: parseArgv(process.argv.slice(2)), env: process.env };
}

/** `--context-size` ↔ `CONTEXT_SIZE`. */
function envName(flag: string): string {
  return flag.replace(/-/g, "_").toUpperCase();
}

function raw(src: Source, flag: string): string | undefined {
  return src.flags.get(flag) ?? src.env[envName(flag)];
}

function invalid(flag: string, message: string): InterlaceError {
  return new InterlaceError(ErrorCode.BadRequest, `invalid --${flag} (${envName(flag)}): ${message}`);
}

export function stringOpt(src: Source, flag: string, def: string): string {
  return raw(src, flag) ?? def;
}

export function optionalStringOpt(src: Source, flag: string): string | undefined {
  return raw(src, flag);
}

export function intOpt(src: Source, flag: string, def: number, bounds: { min?: number; max?: number } = {}): number {
  const value = raw(src, flag);
  if (value === undefined) return def;
  const n = Number(value);
  if (!Number.isInteger(n)) throw invalid(flag, `expected an integer, got "${value}"`);
  if (bounds.min !== undefined && n < bounds.min) throw invalid(flag, `must be >= ${bounds.min}, got ${n}`);
  if (bounds.max !== undefined && n > bounds.max) throw invalid(flag, `must be <= ${bounds.max}, got ${n}`);
  return n;
}

export function boolOpt(src: Source, flag: string, def: boolean): boolean {
  const value = raw(src, flag);
  if (value === undefined) return def;
  if (["true", "1", "yes"].includes(value)) return true;
  if (["false", "0", "no"].includes(value)) return false;
  throw invalid(flag, `expected true or false, got "${value}"`);
}

export function enumOpt<T extends string>(src: Source, flag: string, allowed: readonly T[], def: T): T {
  const value = raw(src, flag);
  if (value === undefined) return def;
  if (!(allowed as readonly string[]).includes(value)) throw invalid(flag, `expected one of ${allowed.join("|")}, got "${value}"`);
  return value as T;
}
