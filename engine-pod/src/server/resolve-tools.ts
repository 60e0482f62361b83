/**
 * @module Tool lists in requests → validated ToolSpecs. A session's tools
 * must be runnable: a builtin of this engine's in-process executor (given by
 * name alone, or as a full spec), or a tool that names its pool (one of the
 * engine's own namespace) when the engine routes calls over NATS. Completion
 * tools (OpenAI path) are run by the client, so any well-formed spec is
 * accepted there.
 */
import { ErrorCode, TOOL_NAME_PATTERN, type ToolSpec } from "../../../common/src/index.js";
import { schemaError } from "../../../common/src/wire/index.js";
import { foreignPoolReason } from "../executor/nats/tenant-pools.js";
import { HttpError } from "./http-errors.js";

/** What tools this engine can run itself. */
export interface ToolCatalog {
  /** Tools the in-process executor runs, by name. */
  builtins: ReadonlyMap<string, ToolSpec>;
  /** Tools that name a `pool` are accepted (the NATS executor routes them). */
  pools: boolean;
  /** Tools that name no pool go to this one (NATS executor's default pool), so any tool is accepted. */
  defaultPool?: string;
  /** NATS executor: this pod's namespace, the only one whose pools it can reach (see tenant-pools.ts). */
  namespace?: string;
}

const bad = (message: string): HttpError => HttpError.of(ErrorCode.BadRequest, message);

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Checks one full spec's shape and that its parameters compile as JSON Schema. */
export function checkToolSpec(raw: unknown, where: string): ToolSpec {
  if (!isObject(raw)) throw bad(`${where}: expected a tool object or a builtin tool name`);
  const name = raw["name"];
  if (typeof name !== "string" || !TOOL_NAME_PATTERN.test(name)) {
    throw bad(`${where}: "name" must match ${TOOL_NAME_PATTERN.source}, got ${JSON.stringify(name)}`);
  }
  const description = raw["description"] ?? "";
  if (typeof description !== "string") throw bad(`tool "${name}": "description" must be a string`);
  const parameters = raw["parameters"] ?? { type: "object", properties: {} };
  if (!isObject(parameters)) throw bad(`tool "${name}": "parameters" must be a JSON Schema object`);
  const type = parameters["type"];
  if (type !== undefined && type !== "object" && type !== "dict") {
    throw bad(`tool "${name}": "parameters" must describe an object (type "object"), got type ${JSON.stringify(type)}`);
  }
  const invalid = schemaError(parameters);
  if (invalid !== null) throw bad(`tool "${name}": "parameters" is not a valid JSON Schema: ${invalid}`);
  const spec: ToolSpec = { name, description, parameters };
  const latency = raw["estimatedLatencyMs"];
  if (latency !== undefined) {
    if (typeof latency !== "number" || !Number.isFinite(latency) || latency < 0) {
      throw bad(`tool "${name}": "estimatedLatencyMs" must be a non-negative number`);
    }
    spec.estimatedLatencyMs = latency;
  }
  for (const flag of ["speculative", "idempotent"] as const) {
    const v = raw[flag];
    if (v === undefined) continue;
    if (typeof v !== "boolean") throw bad(`tool "${name}": "${flag}" must be a boolean`);
    spec[flag] = v;
  }
  const pool = raw["pool"];
  if (pool !== undefined) {
    if (!isObject(pool) || typeof pool["namespace"] !== "string" || typeof pool["name"] !== "string") {
      throw bad(`tool "${name}": "pool" must be {"namespace": string, "name": string}`);
    }
    spec.pool = { namespace: pool["namespace"], name: pool["name"] };
  }
  return spec;
}

/**
 * Resolves a session's `tools`: each entry a builtin name, `{name}` of a
 * builtin, or a full spec. Throws 400 `unknown_tool` for tools nothing here
 * can run and 400 `bad_request` for malformed specs or duplicates.
 */
export function resolveSessionTools(raw: unknown, catalog: ToolCatalog): ToolSpec[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw bad(`"tools" must be an array`);
  const seen = new Set<string>();
  return raw.map((entry, i) => {
    const where = `tools[${i}]`;
    let spec: ToolSpec;
    const nameOnly = typeof entry === "string" ? entry : isObject(entry) && Object.keys(entry).length === 1 ? entry["name"] : undefined;
    if (nameOnly !== undefined) {
      const builtin = typeof nameOnly === "string" ? catalog.builtins.get(nameOnly) : undefined;
      if (builtin === undefined) {
        throw HttpError.of(ErrorCode.UnknownTool, `${where}: unknown tool ${JSON.stringify(nameOnly)}; builtin tools: ${[...catalog.builtins.keys()].join(", ")}`);
      }
      spec = builtin;
    } else {
      spec = checkToolSpec(entry, where);
      if (spec.pool === undefined && !catalog.builtins.has(spec.name) && catalog.defaultPool === undefined) {
        throw HttpError.of(
          ErrorCode.UnknownTool,
          `unknown tool "${spec.name}": not a builtin of this engine (${[...catalog.builtins.keys()].join(", ")}) and it names no tool pool`,
        );
      }
      if (spec.pool !== undefined && !catalog.pools) {
        throw HttpError.of(ErrorCode.UnknownTool, `tool "${spec.name}" names pool ${spec.pool.namespace}/${spec.pool.name}, but this engine runs tools in-process (start it with --executor nats)`);
      }
      const foreign = spec.pool !== undefined && catalog.namespace !== undefined ? foreignPoolReason(spec.name, spec.pool, catalog.namespace) : null;
      if (foreign !== null) throw HttpError.of(ErrorCode.UnknownTool, foreign);
    }
    if (seen.has(spec.name)) throw bad(`tool "${spec.name}" is listed twice`);
    seen.add(spec.name);
    return spec;
  });
}

/** Resolves completion tools (client-run): any well-formed spec. */
export function checkCompletionTools(specs: unknown[]): ToolSpec[] {
  const seen = new Set<string>();
  return specs.map((s, i) => {
    const spec = checkToolSpec(s, `tools[${i}]`);
    if (seen.has(spec.name)) throw bad(`tool "${spec.name}" is listed twice`);
    seen.add(spec.name);
    return spec;
  });
}
