/**
 * The KV cost model file (`--kv-cost-model-file`): an engine that finds a
 * model measured on its own model file and settings adopts it instead of
 * calibrating; a file for another context size, thread count or model
 * file, a default (unmeasured) model or a broken file is ignored. The last
 * test starts two real engines on the generated `test` model: the first
 * calibrates and writes the file, the second reuses it (its measurement
 * time is unchanged, where a second calibration would rewrite it).
 */
import { mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createLogger } from "../../common/src/index.js";
import { createEngine, type EngineOptions } from "../../engine-pod/src/engine/index.js";
import { costModelKey, defaultCostModel, readCachedCostModel, writeCachedCostModel, type CostModel } from "../../engine-pod/src/kv/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { RecordingExecutor } from "../engine/engine-fixture.js";

const dir = mkdtempSync(join(tmpdir(), "interlace-cost-model-"));
const modelFile = join(dir, "model.gguf");
writeFileSync(modelFile, "not really a model");
const settings = { contextSize: 2048, threads: 1, gpu: false as const };
const measured: CostModel = { ...defaultCostModel(), prefillMsPerToken: 3.1, decodeMsPerToken: 21, source: "measured", calibratedAt: "2026-11-27T05:00:00.000Z" };

t.test("a model stored for a key is read back for that key only", async (t) => {
  const file = join(dir, "a.json");
  const key = costModelKey(modelFile, settings);
  writeCachedCostModel(file, key, measured);
  t.same(readCachedCostModel(file, key), measured, "same model file and settings: reused");
  t.equal(readCachedCostModel(file, { ...key, contextSize: 4096 }), undefined, "another context size: not reused");
  t.equal(readCachedCostModel(file, { ...key, threads: 2 }), undefined, "another thread count: not reused");
  t.equal(readCachedCostModel(file, { ...key, gpu: "cuda" }), undefined, "another GPU setting: not reused");
  utimesSync(modelFile, new Date(), new Date(Date.now() + 60_000));
  t.equal(readCachedCostModel(file, costModelKey(modelFile, settings)), undefined, "the model file replaced (newer mtime): not reused");
});

t.test("missing, broken or unmeasured files are ignored", async (t) => {
  const key = costModelKey(modelFile, settings);
  t.equal(readCachedCostModel(join(dir, "missing.json"), key), undefined, "missing");
  const broken = join(dir, "broken.json");
  writeFileSync(broken, "{ not json");
  t.equal(readCachedCostModel(broken, key), undefined, "not JSON");
  const unmeasured = join(dir, "default.json");
  writeCachedCostModel(unmeasured, key, defaultCostModel());
  t.equal(readCachedCostModel(unmeasured, key), undefined, "a default model is no measurement");
});

t.test("a second engine on the same model and settings reuses the first one's calibration", async (t) => {
  const modelPath = await ensureModel({ preset: "test" });
  const file = join(dir, "engine.json");
  const opts: EngineOptions = { modelPath, gpu: false, sequences: 2, contextSize: 2048, threads: 1, kvPolicy: "auto", maxTokens: 64, prefixCache: true, costModelFile: file };
  const log = createLogger("cost-model-cache-test", "warn");
  const first = await createEngine(opts, new RecordingExecutor(), log);
  await first.close();
  const written = JSON.parse(readFileSync(file, "utf8")) as { costModel: CostModel };
  t.equal(written.costModel.source, "measured", "the first engine calibrated and wrote its model");
  const second = await createEngine(opts, new RecordingExecutor(), log);
  await second.close();
  const after = JSON.parse(readFileSync(file, "utf8")) as { costModel: CostModel };
  t.equal(after.costModel.calibratedAt, written.costModel.calibratedAt, "the second engine did not calibrate again (the file is as the first wrote it)");
  const third = await createEngine({ ...opts, contextSize: 1024 }, new RecordingExecutor(), log);
  await third.close();
  const other = JSON.parse(readFileSync(file, "utf8")) as { key: { contextSize: number }; costModel: CostModel };
  t.equal(other.key.contextSize, 1024, "an engine with another context size calibrated and rewrote the file");
});
