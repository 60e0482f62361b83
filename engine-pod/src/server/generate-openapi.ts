/**
 * @module `npm run openapi` (also part of `npm run generate`): writes the
 * engine pod's OpenAPI document (`openapi.ts`, the request schemas imported
 * from `common/src/wire/`) to `docs/openapi.json`. `--check` writes nothing
 * and exits 1 when the committed file differs from what would be generated
 * (a test runs the same comparison).
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { OPENAPI_DOCUMENT } from "./openapi.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** Where the document is committed, relative to the repository root. */
export const OPENAPI_FILE = "docs/openapi.json";

/** The document as committed: two-space JSON and a final newline. */
export function renderOpenApi(): string {
  return `${JSON.stringify(OPENAPI_DOCUMENT, null, 2)}\n`;
}

/** True when the committed file is what the source generates. */
export async function openApiUpToDate(root = ROOT): Promise<boolean> {
  const current = await readFile(path.join(root, OPENAPI_FILE), "utf8").catch(() => null);
  return current === renderOpenApi();
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--check")) {
    if (!(await openApiUpToDate())) {
      process.stderr.write(`stale ${OPENAPI_FILE} (run npm run openapi)\n`);
      return 1;
    }
    process.stdout.write(`${OPENAPI_FILE} is up to date\n`);
    return 0;
  }
  await writeFile(path.join(ROOT, OPENAPI_FILE), renderOpenApi());
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
  return 0;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
