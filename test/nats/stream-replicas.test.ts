/**
 * No R1 state in a replicated deployment, on a real three-node JetStream
 * cluster: every stream and bucket the components create (the router's app,
 * engine and presence buckets included) has the configured replica count;
 * streams and buckets made at R1 before (an older release) are raised by the
 * operator's upkeep pass, and one the cluster cannot hold at the count is
 * reported; the pre-namespace interrupt stream is removed.
 */
import t from "tap";
import { jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { LEGACY_INTR_STREAM, openAppsBucket, openEnginesBucket, openRoutersBucket } from "../../common/src/protocol/index.js";
import { runStreamUpkeep } from "../../operator/src/controllers/index.js";
import { NatsCluster } from "../../hack/nats.js";
import { log } from "./fixtures.js";

t.test("streams and buckets at the configured replica count; older R1 ones raised or reported", async (t) => {
  const saved = process.env["INTERLACE_NATS_REPLICAS"];
  t.teardown(() => {
    if (saved === undefined) delete process.env["INTERLACE_NATS_REPLICAS"];
    else process.env["INTERLACE_NATS_REPLICAS"] = saved;
  });
  const cluster = await NatsCluster.start();
  t.teardown(() => cluster.stop());
  const nc = await connect({ servers: cluster.urls });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const replicasOf = async (stream: string): Promise<number> => (await jsm.streams.info(stream)).config.num_replicas;

  // An older release: R1 state (a bucket without replicas, the single interrupt stream).
  await new Kvm(nc).create("interlace-runners", { history: 1, storage: StorageType.File });
  await jsm.streams.add({ name: LEGACY_INTR_STREAM, subjects: ["interlace.intr.>"], retention: RetentionPolicy.Workqueue, storage: StorageType.File, num_replicas: 1 });
  await jsm.streams.add({ name: "OTHER_APP", subjects: ["other.>"], num_replicas: 1 });
  t.equal(await replicasOf("KV_interlace-runners"), 1);

  process.env["INTERLACE_NATS_REPLICAS"] = "3";
  await openAppsBucket(nc);
  await openEnginesBucket(nc);
  await openRoutersBucket(nc);
  for (const b of ["KV_interlace-apps", "KV_interlace-engines", "KV_interlace-routers"]) t.equal(await replicasOf(b), 3, `${b} is created at R3`);

  const report = await runStreamUpkeep({ natsUrl: cluster.urls.join(","), replicas: 3, security: () => ({}), log });
  t.ok(report.legacyRemoved, "the pre-namespace interrupt stream is removed");
  t.same(report.upgraded, [{ stream: "KV_interlace-runners", from: 1 }], "the R1 bucket is raised");
  t.equal(await replicasOf("KV_interlace-runners"), 3, "and now has three replicas");
  t.equal(await replicasOf("OTHER_APP"), 1, "streams that are not Interlace's are left alone");
  await t.rejects(jsm.streams.info(LEGACY_INTR_STREAM), /not found/i);

  // More replicas than nodes: the update is refused, and said so.
  const short = await runStreamUpkeep({ natsUrl: cluster.urls.join(","), replicas: 5, security: () => ({}), log });
  t.ok(short.short.some((s) => s.stream === "KV_interlace-apps" && s.replicas === 3 && /peers/.test(s.error)), `a stream that cannot be raised is reported with the reason: ${JSON.stringify(short.short)}`);
  t.same(short.upgraded, []);
});
