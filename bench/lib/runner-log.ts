/**
 * @module The tool runners' log during a bench. A runner that drops or
 * redelivers calls shows only as slow tasks in the bench's own figures (a
 * dropped result waits out its call's deadline), so the benches that spawn
 * runners keep their log lines in one file and print what they say at the
 * end.
 */
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh file for this bench run's runner log lines (pino JSON, one per line). */
export function runnerLogFile(bench: string): string {
  return join(tmpdir(), `interlace-${bench}-runners-${process.pid}-${Date.now()}.log`);
}

/** pino's numeric levels from warn up. */
const LEVEL_NAMES: Record<number, string> = { 40: "warn", 50: "error", 60: "fatal" };

/** Counts of warn-and-up lines by level and message, e.g. "2 warn: call without a usable reply address dropped". */
export function runnerLogCounts(text: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("{")) continue;
    let entry: { level?: unknown; msg?: unknown };
    try {
      entry = JSON.parse(line) as { level?: unknown; msg?: unknown };
    } catch {
      continue;
    }
    const level = typeof entry.level === "number" ? LEVEL_NAMES[entry.level] : undefined;
    if (level === undefined) continue;
    const key = `${level}: ${typeof entry.msg === "string" ? entry.msg : "(no message)"}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** One line for the bench's output: nothing logged, or what was and where the lines are. */
export function summarizeRunnerLog(file: string): string {
  const counts = existsSync(file) ? runnerLogCounts(readFileSync(file, "utf8")) : new Map<string, number>();
  if (counts.size === 0) return "tool runners logged no warnings or errors";
  const parts = [...counts].sort((a, b) => b[1] - a[1]).map(([key, n]) => `${n} × ${key}`);
  return `tool runners logged ${parts.join("; ")} (lines in ${file})`;
}
