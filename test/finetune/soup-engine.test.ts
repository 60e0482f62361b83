/**
 * @module A soup is served like any adapter, and means what it says: on
 * Gemma 3 270M with the repository's CML adapter A, the soup file of A with
 * itself (`npm run finetune -- --stage soup`, exact) gives the greedy output
 * A gives, and so does A loaded twice at scale 0.5 (the engine's
 * `--adapters PATH@SCALE,...`, which the accuracy bench's `--adapter` takes:
 * seven adapters at 1/7 each are their exact soup, unmerged). Skips, saying
 * why, when the model, the adapter or the fine-tuning toolchain is absent.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import t from "tap";
import { createLogger } from "../../common/src/index.js";
import { createEngine } from "../../engine-pod/src/engine/index.js";
import type { AdapterOption } from "../../engine-pod/src/engine/engine-options.js";
import { InProcessExecutor } from "../../engine-pod/src/executor/index.js";
import { FINETUNE_PYTHON } from "../../finetune/src/toolchain.js";
import { GEMMA_PATH, SHIPPED_CML_ADAPTER } from "../../hack/real-models.js";
import { TRIANGLE, TRIANGLE_REQUEST } from "../helpers/eval-task.js";

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, "../..");
const skip = !existsSync(GEMMA_PATH)
  ? `Gemma 3 270M not found at ${GEMMA_PATH} (run hack/tools/50-gemma.sh)`
  : !existsSync(SHIPPED_CML_ADAPTER)
    ? `the CML adapter is not at ${SHIPPED_CML_ADAPTER}`
    : !existsSync(FINETUNE_PYTHON)
      ? "the fine-tuning toolchain is not installed (bash hack/tools/80-finetune.sh)"
      : false;

async function greedy(adapters: AdapterOption[]): Promise<string> {
  const engine = await createEngine(
    { modelPath: GEMMA_PATH, adapters, gpu: false, sequences: 1, contextSize: 2048, threads: 2, kvPolicy: "keep", maxTokens: 48, prefixCache: false },
    new InProcessExecutor(),
    createLogger("soup-engine", "warn"),
    { calibrate: false },
  );
  try {
    const result = await engine.complete({ messages: [{ role: "user", content: TRIANGLE_REQUEST }], tools: [TRIANGLE], maxTokens: 48, temperature: 0, seed: 1, stopAtCalls: "never" });
    return result.raw;
  } finally {
    await engine.close();
  }
}

t.test("the soup of an adapter with itself, and the adapter twice at 0.5, answer as the adapter does", { skip, timeout: 1_200_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "interlace-soup-engine-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, "soup");
  await run("npx", ["tsx", "finetune/src/finetune.ts", "--stage", "soup", "--adapters", `${SHIPPED_CML_ADAPTER},${SHIPPED_CML_ADAPTER}`, "--out", out], { cwd: ROOT, maxBuffer: 16 << 20 });
  const provenance = JSON.parse(readFileSync(join(out, "provenance.json"), "utf8")) as { rank: number; exact: boolean; base: { sha256: string }; inputs: { provenance: { seed: unknown } | null }[] };
  t.match(provenance, { rank: 32, exact: true, base: { sha256: /^[0-9a-f]{64}$/ } }, "an exact soup, its base model's hash recorded");
  t.equal(provenance.inputs.length, 2, "both inputs recorded");
  t.ok(provenance.inputs.every((i) => i.provenance !== null), "with what their own provenance says of their training");

  const alone = await greedy([{ path: SHIPPED_CML_ADAPTER, scale: 1 }]);
  t.match(alone, /\[CALL\]/, "the adapter calls a tool");
  t.equal(await greedy([{ path: join(out, "adapter.gguf"), scale: 1 }]), alone, "the soup file answers as the adapter does");
  t.equal(
    await greedy([
      { path: SHIPPED_CML_ADAPTER, scale: 0.5 },
      { path: SHIPPED_CML_ADAPTER, scale: 0.5 },
    ]),
    alone,
    "the adapter twice at scale 0.5 answers as it does at 1",
  );
  t.not(await greedy([]), alone, "and the base model alone does not: the adapter is what is compared");
});
