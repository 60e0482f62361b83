/**
 * The engine's recent TTFT p90 in its heartbeat, for the autoscaler's
 * `slo.ttftP90Ms`: the window's percentile (injected clock), the wire field
 * (optional, so heartbeats without it, from older engines, still parse), and
 * a real engine process on the generated test model publishing it into the
 * `interlace-engines` bucket after its first session. Likewise the engine's
 * admission counter (`admissions`), which the answer admitting a session
 * names (`x-interlace-admission`) so routers release a placement
 * reservation on the heartbeat that counts the session.
 */
import t from "tap";
import { connect } from "@nats-io/transport-node";
import { ADMISSION_HEADER, ENGINE_TTFT_WINDOW_MS, engineKey, parseAdmission, openEnginesBucket, parseEngineHeartbeat, type EngineHeartbeat } from "../../common/src/protocol/index.js";
import { TtftWindow } from "../../engine-pod/src/metrics/index.js";
import { spawnEngine } from "../../hack/engine-process.js";
import { startNatsServer } from "../helpers/nats-server.js";
import { engineHeartbeat } from "../helpers/engine-heartbeat.js";
import { eventually } from "../helpers/wait.js";
import { QUICK } from "../router/fixtures.js";

t.test("the p90 of the TTFTs recorded within the window", async (t) => {
  let now = 1_000_000;
  const w = new TtftWindow(ENGINE_TTFT_WINDOW_MS, () => now);
  t.equal(w.p90(), undefined, "nothing recorded: no figure (not zero)");
  for (let ms = 100; ms <= 1000; ms += 100) w.record(ms);
  t.equal(w.p90(), 900, "nearest rank: the 9th of 10");
  w.record(-1);
  w.record(Number.NaN);
  t.equal(w.p90(), 900, "nonsense is not recorded");
  now += ENGINE_TTFT_WINDOW_MS / 2;
  w.record(5000);
  t.equal(w.p90(), 1000, "a slow first token raises it");
  now += ENGINE_TTFT_WINDOW_MS / 2 + 1;
  t.equal(w.p90(), 5000, "the older ones leave the window");
  now += ENGINE_TTFT_WINDOW_MS;
  t.equal(w.p90(), undefined, "and so does the last");
});

t.test("ttftP90Ms on the wire is optional and checked", async (t) => {
  const base = engineHeartbeat();
  t.ok(parseEngineHeartbeat(base).ok, "a heartbeat without it (an older engine) parses");
  t.match(parseEngineHeartbeat({ ...base, ttftP90Ms: 420 }), { ok: true, value: { ttftP90Ms: 420 } });
  t.match(parseEngineHeartbeat({ ...base, ttftP90Ms: -3 }), { ok: false, reason: "ttftP90Ms must be a non-negative number" });
  t.match(parseEngineHeartbeat({ ...base, ttftP90Ms: "slow" }), { ok: false, reason: "ttftP90Ms must be a non-negative number" });
});

t.test("admissions on the wire, and in the admission header, are optional and checked", async (t) => {
  const base = engineHeartbeat();
  t.equal((parseEngineHeartbeat(base) as { value: EngineHeartbeat }).value.admissions, undefined, "a heartbeat without it (an older engine) parses");
  t.match(parseEngineHeartbeat({ ...base, admissions: 0 }), { ok: true, value: { admissions: 0 } });
  t.match(parseEngineHeartbeat({ ...base, admissions: 2.5 }), { ok: false, reason: "admissions must be a non-negative integer" });
  t.match(parseEngineHeartbeat({ ...base, admissions: -1 }), { ok: false, reason: "admissions must be a non-negative integer" });
  t.equal(parseAdmission("17"), 17);
  for (const bad of [null, undefined, "", "-1", "1.5", "x", "1e3"]) t.equal(parseAdmission(bad), undefined, `no count from ${JSON.stringify(bad)}`);
});

t.test("a real engine's heartbeat carries its recent TTFT p90 once a session has produced a first token", async (t) => {
  const nats = await startNatsServer(t);
  const engine = await spawnEngine(["--model-preset", "test", "--sequences", "2", "--context-size", "2048", "--nats-url", nats.url, "--pool", "ns/p", "--pod-name", "e-0", "--heartbeat-ms", "200"], { readyTimeoutMs: 120_000 });
  t.teardown(() => engine.stop());
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const kv = await openEnginesBucket(nc);
  const heartbeat = async (): Promise<EngineHeartbeat | undefined> => {
    const e = await kv.get(engineKey({ namespace: "ns", name: "p" }, "e-0"));
    const parsed = e?.operation === "PUT" ? parseEngineHeartbeat(e.json()) : undefined;
    return parsed?.ok === true ? parsed.value : undefined;
  };
  t.ok(await eventually(async () => (await heartbeat())?.ready === true, 30_000), "the engine beats");
  t.equal((await heartbeat())?.ttftP90Ms, undefined, "no first token yet: no TTFT in the heartbeat");

  const res = await fetch(`${engine.url}/v1/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(QUICK) });
  t.equal(res.status, 201);
  t.equal(res.headers.get(ADMISSION_HEADER), "1", "the answer names the count at which the engine admitted the session: its first");
  const { id } = (await res.json()) as { id: string };
  const events = await (await fetch(`${engine.url}/v1/sessions/${id}/events`)).text();
  t.match(events, /event: done/);
  const ttftMs = Number(/"ttftMs":([\d.]+)/.exec(events)?.[1]);
  t.ok(await eventually(async () => (await heartbeat())?.ttftP90Ms !== undefined, 10_000), "the next beats carry a TTFT p90");
  const p90 = (await heartbeat())!.ttftP90Ms!;
  t.ok(p90 >= 0 && Math.abs(p90 - ttftMs) <= 50, `the heartbeat's p90 (${p90} ms) is the one session's TTFT (${ttftMs} ms)`);
  t.equal((await heartbeat())?.admissions, 1, "the heartbeat counts that one admission");

  const completion = await fetch(`${engine.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
  });
  t.equal(completion.status, 200);
  await completion.text();
  t.equal(completion.headers.get(ADMISSION_HEADER), "2", "a completion is admitted too, and its answer says so");
  t.ok(await eventually(async () => (await heartbeat())?.admissions === 2, 10_000), "and the next beats count it");
});
