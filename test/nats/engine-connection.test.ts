/**
 * An engine pod opens one NATS connection: its NATS executor's, which its
 * heartbeats share (it used to open a second one for them); with the
 * in-process executor, one for the heartbeats alone. Counted by the real
 * nats-server's monitoring endpoint (`/connz`); the heartbeats still land in
 * the `interlace-engines` bucket. No component builds its connection options
 * itself: they all call `connectNats`.
 */
import t from "tap";
import { connect } from "@nats-io/transport-node";
import { engineKey, openEnginesBucket } from "../../common/src/protocol/index.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { eventually } from "../helpers/wait.js";

const POOL = { namespace: "default", name: "conn" };

t.test("one NATS connection per engine pod", async (t) => {
  const nats = await startNatsServer(t);
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const engines = await openEnginesBucket(nc);
  for (const [pod, executor] of [["e-nats", "nats"], ["e-local", "in-process"]] as const) {
    const engine = await spawnEngine(["--model-preset", "test", "--sequences", "1", "--context-size", "1024", "--executor", executor, "--nats-url", nats.url, "--pool", `${POOL.namespace}/${POOL.name}`, "--pod-name", pod, "--heartbeat-ms", "200"], { readyTimeoutMs: 90_000 });
    t.teardown(() => engine.stop());
    t.ok(await eventually(async () => (await engines.get(engineKey(POOL, pod)))?.value !== undefined, 20_000), `${pod}: heartbeats arrive`);
    const connz = (await (await fetch(`http://127.0.0.1:${nats.httpPort}/connz?limit=1024`)).json()) as { connections?: { name?: string }[] };
    const mine = (connz.connections ?? []).map((c) => c.name ?? "").filter((name) => name.includes(pod));
    t.same(mine, [`interlace-engine-${pod}`], `${pod} (${executor} executor): one connection`);
  }
});

t.test("components open NATS connections only through connectNats (one set of options)", async (t) => {
  const { readdirSync, readFileSync, statSync } = await import("node:fs");
  const { join } = await import("node:path");
  const root = new URL("../../", import.meta.url).pathname;
  const sources = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => {
      const p = join(dir, f);
      return statSync(p).isDirectory() ? sources(p) : p.endsWith(".ts") ? [p] : [];
    });
  const direct = ["engine-pod/src", "router/src", "toolrunner/src", "operator/src", "common/src"]
    .flatMap((d) => sources(join(root, d)))
    .filter((f) => !f.endsWith("common/src/security/nats-connect.ts") && /import \{[^}]*\bconnect\b[^}]*\} from "@nats-io\/transport-node"/.test(readFileSync(f, "utf8")));
  t.same(direct.map((f) => f.slice(root.length)), []);
});
