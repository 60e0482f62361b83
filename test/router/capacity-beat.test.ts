/**
 * An engine beats as soon as it can take more new sessions than the routers
 * believe (engine-pod/src/heartbeat/heartbeat-publisher.ts), so requests the
 * router holds for a sequence place when one frees, not at the next
 * periodic heartbeat. Real nats-server, one engine process with one
 * sequence whose periodic heartbeats are 30 s apart (longer than the test),
 * one router with a capacity queue. Without the capacity beat both cases
 * below wait for a heartbeat that does not come and end in 429.
 */
import t, { type Test } from "tap";
import { appConfig, openSession, parkedSession, postJson, QUICK, startStack, streamEvents, type Stack } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(180_000);

const QUEUE_MS = 8_000;

async function stackWith(t: Test, retention: string): Promise<{ stack: Stack; r0: string }> {
  const stack = await startStack(t, {
    engines: 1,
    routers: 1,
    // The first periodic heartbeat goes out at start, the next after the test; the router keeps the engine that long.
    engineArgs: ["--sequences", "1", "--heartbeat-ms", "30000", "--kv-retention", retention],
    router: { queueMs: QUEUE_MS, engineTtlMs: 60_000 },
  });
  await stack.putApp(appConfig("alpha"));
  return { stack, r0: stack.url(0) };
}

t.test("a session paused on a tool call: the engine says at once that its sequence can be taken, and the next request takes it", async (t) => {
  const { stack, r0 } = await stackWith(t, "eta");
  const parked = await parkedSession(t, r0, "alpha");
  t.ok(
    await eventually(() => stack.routers[0]!.engines.loads("default", "pool").every((e) => e.free === 1), 5_000),
    "the router's view shows the sequence free to take, long before the next periodic heartbeat",
  );
  const opened = await openSession(r0, "alpha", QUICK);
  t.equal(opened.engine, parked.engine, "the next request is placed on the one engine");
  t.equal(opened.placement.queuedMs, 0, "without waiting in the queue");
  t.match((await streamEvents(r0, "alpha", opened.id)).at(-1), { type: "done" }, "and runs to its end");
  await parked.end();
});

t.test("every sequence held: a queued request is placed when a session ends, not at the next periodic heartbeat", async (t) => {
  // `pin`: a paused session keeps its sequence, so the engine is full until it ends.
  const { stack, r0 } = await stackWith(t, "pin");
  const parked = await parkedSession(t, r0, "alpha");
  t.same(
    stack.routers[0]!.engines.loads("default", "pool").map((e) => e.free),
    [0],
    "the engine is full",
  );
  const queued = postJson(`${r0}/v1/apps/default/alpha/sessions`, QUICK);
  t.ok(await eventually(async () => /interlace_router_capacity_queued_requests\{pool="default\/pool"\} 1/.test(await (await fetch(`${r0}/metrics`)).text()), 3_000), "the next request waits in the queue");
  await parked.end();
  const res = await queued;
  const text = await res.text();
  t.equal(res.status, 201, `placed once the session ended (${res.status} ${text.slice(0, 200)})`);
  const opened = JSON.parse(text) as { id: string; placement: { queuedMs: number } };
  t.ok(opened.placement.queuedMs > 0 && opened.placement.queuedMs < QUEUE_MS, `after waiting in the queue (${opened.placement.queuedMs} ms)`);
  t.match((await streamEvents(r0, "alpha", opened.id)).at(-1), { type: "done" }, "and runs to its end");
});
