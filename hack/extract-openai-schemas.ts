/**
 * @module `npx tsx hack/extract-openai-schemas.ts --spec openapi.yaml --commit SHA [--out DIR]`:
 * the part of OpenAI's published OpenAPI document (github.com/openai/openai-openapi,
 * MIT) that Interlace's answers must conform to, written as JSON for the
 * conformance tests: the component schemas of the chat completion and chunk,
 * the Responses object, its stream events, the input-item list and the error
 * body, with everything they `$ref` (transitively), kept as the spec writes
 * them. The spec gives the 200 of `DELETE /responses/{id}` no schema, only an
 * example: that example is kept verbatim beside the schemas.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parse } from "yaml";
import { parseArgv } from "../common/src/index.js";

/** The schemas Interlace answers with, by the spec's names. */
const ROOT_SCHEMAS = [
  "CreateChatCompletionResponse",
  "CreateChatCompletionStreamResponse",
  "Response",
  "ResponseStreamEvent",
  "ResponseItemList",
  "ErrorResponse",
] as const;

const COMPONENT_REF = "#/components/schemas/";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isRecord(value: unknown): value is Record<string, Json> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every component name `value` refers to, anywhere inside it. */
function refsIn(value: Json, out: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (isRecord(value)) {
    for (const [key, v] of Object.entries(value)) {
      if (key === "$ref" && typeof v === "string") {
        if (!v.startsWith(COMPONENT_REF)) throw new Error(`a $ref outside components.schemas: ${v}`);
        out.add(v.slice(COMPONENT_REF.length));
      } else refsIn(v, out);
    }
  }
  return out;
}

/** `roots` and every schema they reach through `$ref`, in name order. */
function schemaClosure(schemas: Record<string, Json>, roots: readonly string[]): Record<string, Json> {
  const seen = new Set<string>();
  const todo = [...roots];
  while (todo.length > 0) {
    const name = todo.pop()!;
    if (seen.has(name)) continue;
    const schema = schemas[name];
    if (schema === undefined) throw new Error(`the spec has no components.schemas.${name}`);
    seen.add(name);
    for (const ref of refsIn(schema, new Set())) if (!seen.has(ref)) todo.push(ref);
  }
  return Object.fromEntries([...seen].sort().map((name) => [name, schemas[name]!]));
}

/** The documented answer of `DELETE /responses/{response_id}` (the spec's only statement of its shape). */
function deleteResponseExample(spec: Record<string, Json>): Json {
  const paths = spec["paths"];
  const op = isRecord(paths) && isRecord(paths["/responses/{response_id}"]) ? paths["/responses/{response_id}"]["delete"] : undefined;
  const meta = isRecord(op) ? op["x-oaiMeta"] : undefined;
  const examples = isRecord(meta) ? meta["examples"] : undefined;
  const text = isRecord(examples) ? examples["response"] : undefined;
  if (typeof text !== "string") throw new Error("the spec has no example answer for DELETE /responses/{response_id}");
  return JSON.parse(text) as Json;
}

async function main(): Promise<number> {
  const flags = parseArgv(process.argv.slice(2));
  const specPath = flags.get("spec");
  const commit = flags.get("commit");
  if (specPath === undefined || commit === undefined || !/^[0-9a-f]{40}$/.test(commit)) {
    process.stderr.write("usage: extract-openai-schemas --spec openapi.yaml --commit <40-hex upstream commit> [--out DIR]\n");
    return 2;
  }
  const out = resolve(flags.get("out") ?? join(import.meta.dirname, "../test/fixtures/openai-openapi"));
  const spec = parse(await readFile(specPath, "utf8"), { maxAliasCount: -1 }) as Record<string, Json>;
  const components = spec["components"];
  if (!isRecord(components) || !isRecord(components["schemas"])) throw new Error("the spec has no components.schemas");
  const info = isRecord(spec["info"]) ? spec["info"] : {};
  const schemas = schemaClosure(components["schemas"], ROOT_SCHEMAS);
  const subset = {
    source: { repository: "https://github.com/openai/openai-openapi", commit, file: "openapi.yaml", openapi: spec["openapi"] ?? null, version: info["version"] ?? null },
    roots: ROOT_SCHEMAS,
    examples: { deleteResponse: deleteResponseExample(spec) },
    components: { schemas },
  };
  await mkdir(out, { recursive: true });
  const file = join(out, "schemas.json");
  await writeFile(file, `${JSON.stringify(subset, null, 1)}\n`);
  process.stdout.write(`${file}: ${Object.keys(schemas).length} schemas from ${ROOT_SCHEMAS.length} roots (openapi ${String(spec["openapi"])}, version ${String(info["version"])})\n`);
  return 0;
}

main().then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`extract-openai-schemas: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
