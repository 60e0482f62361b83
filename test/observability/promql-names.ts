/**
 * @module Metric names a PromQL expression selects, and the metric names a
 * Prometheus text exposition declares. Prometheus 2.42 has no parse API, so
 * names are found lexically: strings, label matchers, ranges, grouping
 * clauses and numbers are removed first; what is left that is an identifier
 * not followed by `(` (a function or aggregation) and not a keyword is a
 * metric name. `{__name__="..."}` selectors are read from their matcher.
 */

const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan", "atan2", "start", "end"]);

/** The metric names `expr` selects (sorted, unique). */
export function promqlMetricNames(expr: string): string[] {
  const names = new Set<string>();
  for (const m of expr.matchAll(/__name__\s*=\s*"([^"]+)"/g)) names.add(m[1]!);
  let s = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/#[^\n]*/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
    // Numbers (with exponents) and durations (`offset 5m`).
    .replace(/(?<![A-Za-z_:])(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)(?:ms|[smhdwy])?(?![A-Za-z0-9_:])/g, " ");
  s = s.replace(/(?:\d+(?:ms|[smhdwy]))+/g, " ");
  for (const m of s.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const word = m[0];
    const rest = s.slice(m.index + word.length);
    if (/^\s*\(/.test(rest)) continue; // a function or an aggregation
    if (KEYWORDS.has(word.toLowerCase())) continue;
    names.add(word);
  }
  return [...names].sort();
}

/**
 * The series names a Prometheus text exposition declares, including metrics
 * that have no sample yet (labelled metrics before their first observation):
 * `# TYPE` lines, with `_bucket`/`_sum`/`_count` for histograms and
 * `_sum`/`_count` for summaries, plus every sample line's name.
 */
export function exposedMetricNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split("\n")) {
    const type = /^# TYPE ([A-Za-z_:][A-Za-z0-9_:]*) (\w+)/.exec(line);
    if (type) {
      const [, name, kind] = type as unknown as [string, string, string];
      names.add(name);
      if (kind === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(name + suffix);
      if (kind === "summary") for (const suffix of ["_sum", "_count"]) names.add(name + suffix);
      continue;
    }
    const sample = /^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]/.exec(line);
    if (sample) names.add(sample[1]!);
  }
  return names;
}
