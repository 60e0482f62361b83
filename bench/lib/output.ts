/**
 * @module What every benchmark writes: its results as JSON (into the output
 * folder, and to `--json FILE` when given) and its charts, declared in
 * Vega-Lite and rendered headless to SVG by Vega.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import * as vega from "vega";
import { compile, type TopLevelSpec } from "vega-lite";

/** Renders a Vega-Lite spec to SVG, headless. */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  return new vega.View(vega.parse(compile(spec).spec), { renderer: "none" }).toSVG();
}

/** Writes `<outDir>/<name>.json`, and the same body to `json` (the `--json` flag) when given. */
export function writeResultsJson(value: unknown, outDir: string, name: string, json?: string): void {
  const body = JSON.stringify(value, null, 2);
  if (json !== undefined) {
    mkdirSync(dirname(resolve(json)), { recursive: true });
    writeFileSync(json, body);
  }
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, `${name}.json`), body);
}

/** Writes a chart as `<outDir>/<name>.vl.json` (the spec) and `<outDir>/<name>.svg`. */
export async function writeChart(outDir: string, name: string, spec: TopLevelSpec): Promise<void> {
  writeFileSync(join(outDir, `${name}.vl.json`), JSON.stringify(spec, null, 2));
  writeFileSync(join(outDir, `${name}.svg`), await renderSvg(spec));
}
