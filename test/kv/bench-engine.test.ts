/**
 * @module The engine benchmark end to end on the tiny `test` model (`--quick`):
 * it writes every required field, injection never re-prefills, and every trap
 * round (keep / swap / recompute at 128, 512, 2048 tokens) preserves the
 * greedy continuation. Figures themselves are not asserted.
 */
import t from "tap";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "../../bench/engine/main.js";

t.test("npm run bench -- engine --preset test --quick", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "interlace-bench-engine-"));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, "engine.json");
  await run(["--preset", "test", "--quick", "--json", file]);
  const r = JSON.parse(await readFile(file, "utf8")) as Record<string, unknown> & {
    trap: Record<string, { keep: number; swap: number; recompute: number }>;
    trap_detail: Record<string, { continuationPreserved: boolean }>;
    injection: { own_loop: { reprefill_tokens: number; interrupts: number }; engine_text: { interrupts: number; scripted: boolean } | null };
  };
  for (const key of ["tpot_ms", "prefill_tokens_per_s", "injection_delay_tokens_p99", "reprefill_tokens_on_inject"]) {
    t.type(r[key], "number", key);
  }
  t.ok((r["tpot_ms"] as number) > 0);
  t.equal(r["reprefill_tokens_on_inject"], 0, "injection re-prefills nothing (engine counter)");
  t.equal(r["reprefill_tokens_on_inject_llama_meter"], 0, "llama.cpp evaluated nothing beyond decode steps and injected tokens");
  t.equal(r.injection.own_loop.reprefill_tokens, 0, "injection re-prefills nothing (llama.cpp token meter)");
  t.ok(r.injection.own_loop.interrupts > 0, "the own loop injected interrupts");
  t.ok(r.injection.engine_text !== null && r.injection.engine_text.interrupts > 0, "the engine injected interrupts");
  t.equal(r.injection.engine_text?.scripted, true, "labelled scripted");
  t.same(Object.keys(r.trap).sort(), ["128", "2048", "512"]);
  for (const [n, detail] of Object.entries(r.trap_detail)) t.ok(detail.continuationPreserved, `continuation preserved at ${n}`);
  for (const costs of Object.values(r.trap)) t.ok(costs.swap > 0 && costs.recompute > 0 && costs.keep >= 0);
});
