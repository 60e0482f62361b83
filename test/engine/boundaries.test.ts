/**
 * The engine pod's module boundaries, read from the source: no import cycle
 * (type-only imports included), the engine core imports nothing of the layers
 * built on it (speculation, the upstream backend, the server), only the KV
 * manager removes, copies, saves or loads a sequence's cells, and the error
 * line a model reads is built in one place.
 */
import t from "tap";
import ts from "typescript";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const SRC = fileURLToPath(new URL("../../engine-pod/src", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
  });
}

const files = sources(SRC);
const rel = (p: string): string => relative(SRC, p);
/** Relative imports of each file inside engine-pod/src, as paths relative to it. */
const graph = new Map(
  files.map((f) => {
    const imported = ts.preProcessFile(readFileSync(f, "utf8"), true, true).importedFiles.map((i) => i.fileName);
    const local = imported.filter((n) => n.startsWith(".")).map((n) => resolve(dirname(f), n.replace(/\.js$/, ".ts")));
    return [rel(f), local.filter((p) => p.startsWith(SRC + "/")).map(rel)] as const;
  }),
);

/** Strongly connected components of more than one file (Tarjan). */
function cycles(): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const f of graph.keys()) if (!index.has(f)) visit(f);
  return found;
}

t.test("no import cycle in the engine pod", async (t) => {
  t.ok(graph.size > 50, `${graph.size} files read`);
  t.same(cycles(), []);
});

t.test("the engine core imports nothing of the layers built on it", async (t) => {
  const upward = [...graph].flatMap(([file, deps]) =>
    file.startsWith("engine/") ? deps.filter((d) => /^(speculation|upstream|server|heartbeat)\//.test(d)).map((d) => `${file} -> ${d}`) : [],
  );
  t.same(upward, []);
});

t.test("only the KV manager removes, copies, saves or loads cells of the engine's sequences", async (t) => {
  const CELLS = /\.(eraseContextTokenRanges|clearHistory|saveStateToFile|loadStateFromFile|_copyStateFromOtherSequence|controlledEvaluate)\(/;
  // The draft model's own context is its own (speculation/draft-model.ts): not the engine's sequences.
  const outside = files.filter((f) => !rel(f).startsWith("kv/") && rel(f) !== "speculation/draft-model.ts" && CELLS.test(readFileSync(f, "utf8")));
  t.same(outside.map(rel), []);
});

t.test("the error line a model reads is built only by formatErrorLine (common/src/wire/error-line.ts)", async (t) => {
  const byHand = files.filter((f) => /[`"']error: /.test(readFileSync(f, "utf8").replace(/^\s*(\*|\/\/).*$/gm, "")));
  t.same(byHand.map(rel), []);
});
