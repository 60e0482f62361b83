/**
 * @module Loads the runner's spec file (YAML or JSON; the ToolPool's
 * ConfigMap) and validates it once at start-up.
 */
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { compileSchema, toolRunnerConfigSchema, type ToolRunnerConfig } from "../../common/src/protocol/index.js";

const validate = compileSchema<ToolRunnerConfig>(toolRunnerConfigSchema, "spec");

/** Parses and validates spec text; throws one readable error. */
export function parseRunnerConfig(text: string, source = "spec file"): ToolRunnerConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new Error(`${source}: not valid YAML/JSON: ${(err as Error).message}`);
  }
  const v = validate(raw);
  if (!v.ok) throw new Error(`${source}: ${v.error}`);
  return v.value;
}

export function loadRunnerConfig(path: string): ToolRunnerConfig {
  return parseRunnerConfig(readFileSync(path, "utf8"), path);
}
