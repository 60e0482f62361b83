/**
 * The ToolPool finalizer's cleanup hook against a real nats-server: it
 * deletes the pool's durable consumer and call stream, leaves other pools'
 * alone, and is idempotent (a retried cleanup of a gone pool succeeds).
 */
import t from "tap";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { ensurePoolStream, poolStream, RUNNERS_CONSUMER } from "../../common/src/protocol/index.js";
import { JetStreamPoolCleanup } from "../../operator/src/controllers/index.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { testLogger } from "./helpers.js";

t.test("deletes the pool's consumer and stream, idempotently", async (t) => {
  const nats = await startNatsServer(t);
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const web = { namespace: "team", name: "web" };
  const other = { namespace: "team", name: "other" };
  for (const p of [web, other]) await ensurePoolStream(jsm, p, { ackWaitMs: 30_000, maxDeliver: 3 });
  t.ok(await jsm.consumers.info(poolStream(web), RUNNERS_CONSUMER));

  const cleanup = new JetStreamPoolCleanup(nats.url, testLogger("cleanup"));
  t.teardown(() => cleanup.close());
  await cleanup.cleanup(web);
  await t.rejects(jsm.consumers.info(poolStream(web), RUNNERS_CONSUMER), "consumer gone");
  await t.rejects(jsm.streams.info(poolStream(web)), "stream gone");
  t.ok(await jsm.consumers.info(poolStream(other), RUNNERS_CONSUMER), "another pool is untouched");
  await cleanup.cleanup(web);
  t.pass("a second cleanup of the same pool succeeds");
});

t.test("fails (to be retried) while NATS is unreachable", async (t) => {
  const nats = await startNatsServer(t);
  const url = nats.url;
  await nats.stop();
  const cleanup = new JetStreamPoolCleanup(url, testLogger("cleanup"));
  t.teardown(() => cleanup.close());
  await t.rejects(cleanup.cleanup({ namespace: "team", name: "web" }));
});
