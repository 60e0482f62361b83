/**
 * Calibrated KV cost models shared through NATS (engine-pod/src/kv/
 * shared-cost-models.ts), on a real nats-server and real engines on the
 * generated `test` model: the first engine of a namespace calibrates and
 * stores its model; a second one on the same model content, settings and
 * hardware adopts it without calibrating (the entry is not written again);
 * one with another context size calibrates and stores its own; another
 * namespace sees none of them; an entry for another key (a digest
 * collision) or an unmeasured model is not adopted. The key names the
 * model's content, so two copies of the model at different paths and times
 * (two pods that each downloaded it) share one entry.
 */
import { copyFileSync, mkdtempSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { connect } from "@nats-io/transport-node";
import { createLogger } from "../../common/src/index.js";
import { openCostModelsBucket } from "../../common/src/protocol/index.js";
import { createEngine, type EngineOptions } from "../../engine-pod/src/engine/index.js";
import { defaultCostModel, SharedCostModels, sharedCostModelEntry, sharedCostModelKey, type CostModel } from "../../engine-pod/src/kv/index.js";
import { ensureModel } from "../../engine-pod/src/model/index.js";
import { RecordingExecutor } from "../engine/engine-fixture.js";
import { startNatsServer } from "../helpers/nats-server.js";

const server = await startNatsServer(t);
const nc = await connect({ servers: server.url });
t.teardown(() => nc.close());
const kv = await openCostModelsBucket(nc);
const modelPath = await ensureModel({ preset: "test" });
const log = createLogger("shared-cost-models-test", "warn");

t.test("the key names the model's content, not its path or time", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "interlace-shared-cost-"));
  const copy = join(dir, "model.gguf");
  copyFileSync(modelPath, copy);
  utimesSync(copy, new Date(), new Date(Date.now() + 60_000));
  const settings = { contextSize: 2048, threads: 1, gpu: false as const };
  const a = sharedCostModelKey(modelPath, settings, []);
  t.same(sharedCostModelKey(copy, settings, []), a, "another path and modification time, the same content: the same key");
  t.notSame(sharedCostModelKey(modelPath, { ...settings, threads: 2 }, []), a, "another thread count: another key");
  t.match(a.hardware, /^cpu:.+x\d+$/, "the CPU's model and core count");
  t.match(sharedCostModelKey(modelPath, { ...settings, gpu: "cuda" }, ["NVIDIA H100"]).hardware, "gpu:NVIDIA H100", "the GPUs' names on a GPU");
});

t.test("a second engine of the namespace adopts the first one's calibration; another context size or namespace does not", async (t) => {
  const opts: EngineOptions = { modelPath, gpu: false, sequences: 2, contextSize: 2048, threads: 1, kvPolicy: "auto", maxTokens: 64, prefixCache: true };
  const shared = new SharedCostModels(kv, "team-a");
  const key = sharedCostModelKey(modelPath, opts, []);
  const entry = sharedCostModelEntry("team-a", key);
  t.equal(await kv.get(entry), null, "nothing stored yet");

  const first = await createEngine(opts, new RecordingExecutor(), log, { sharedCostModels: shared });
  await first.close();
  const stored = await kv.get(entry);
  t.ok(stored !== null, "the first engine calibrated and stored its model");
  const model = stored!.json<{ costModel: CostModel }>().costModel;
  t.equal(model.source, "measured");

  const second = await createEngine(opts, new RecordingExecutor(), log, { sharedCostModels: shared });
  await second.close();
  t.equal((await kv.get(entry))?.revision, stored!.revision, "the second engine adopted it: the entry was not written again");
  t.same(await shared.read(key), model, "and reads back the same model");

  const other = await createEngine({ ...opts, contextSize: 1024 }, new RecordingExecutor(), log, { sharedCostModels: shared });
  await other.close();
  const otherEntry = await kv.get(sharedCostModelEntry("team-a", sharedCostModelKey(modelPath, { ...opts, contextSize: 1024 }, [])));
  t.ok(otherEntry !== null, "an engine with another context size calibrated and stored its own");
  t.equal(await new SharedCostModels(kv, "team-b").read(key), undefined, "another namespace's engines do not see team-a's models");
});

t.test("an entry for another key or an unmeasured model is not adopted", async (t) => {
  const shared = new SharedCostModels(kv, "team-c");
  const key = sharedCostModelKey(modelPath, { contextSize: 2048, threads: 1, gpu: false }, []);
  await kv.put(sharedCostModelEntry("team-c", key), JSON.stringify({ key: { ...key, hardware: "cpu:other" }, costModel: { ...defaultCostModel(), source: "measured" } }));
  t.equal(await shared.read(key), undefined, "stored under this key's digest, but for other hardware");
  await shared.write(key, defaultCostModel());
  t.equal(await shared.read(key), undefined, "a default model is no measurement");
  await kv.put(sharedCostModelEntry("team-c", key), "{ not json");
  t.equal(await shared.read(key), undefined, "not JSON");
});
