/**
 * Two router replicas' capacity queues place queued requests in one arrival
 * order (router/src/queue-heads.ts): a request queued at one replica is
 * placed before a younger one queued at the other, whichever replica
 * would win the race for the freed sequence. Real nats-server, one engine
 * process with one sequence (`pin`: a session paused on a call keeps it),
 * two router replicas, each with its own NATS connection. Three rounds,
 * alternating which replica holds the older request: without the shared
 * heads the younger one takes the sequence in some round (each freed
 * sequence is a race between the replicas' reservations).
 */
import t from "tap";
import { appConfig, parkedSession, postJson, QUICK, startStack, streamEvents } from "./fixtures.js";
import { eventually } from "../helpers/wait.js";

t.setTimeout(240_000);

const stack = await startStack(t, { engines: 1, routers: 2, engineArgs: ["--sequences", "1", "--kv-retention", "pin"], router: { queueMs: 20_000 } });
await stack.putApp(appConfig("alpha"));
const urls = [stack.url(0), stack.url(1)];

async function queued(url: string, n: number): Promise<boolean> {
  return eventually(async () => new RegExp(`interlace_router_capacity_queued_requests\\{pool="default/pool"\\} ${n}`).test(await (await fetch(`${url}/metrics`)).text()), 5_000);
}

t.test("queued at two replicas: the older request is placed first, whichever replica it waits at", async (t) => {
  for (let round = 0; round < 3; round++) {
    const [olderAt, youngerAt] = round % 2 === 0 ? [urls[0]!, urls[1]!] : [urls[1]!, urls[0]!];
    // The one sequence, held by a session paused on its call until it is deleted.
    const parked = await parkedSession(t, olderAt, "alpha");

    const order: string[] = [];
    const older = postJson(`${olderAt}/v1/apps/default/alpha/sessions`, { ...QUICK, prompt: "Older." }).then((res) => (order.push("older"), res));
    t.ok(await queued(olderAt, 1), "the older request waits at its replica");
    const younger = postJson(`${youngerAt}/v1/apps/default/alpha/sessions`, { ...QUICK, prompt: "Younger." }).then((res) => (order.push("younger"), res));
    t.ok(await queued(youngerAt, 1), "the younger one waits at the other replica");

    await parked.end();
    const first = await older;
    t.equal(first.status, 201, "the older request is placed");
    await streamEvents(olderAt, "alpha", ((await first.json()) as { id: string }).id);
    const second = await younger;
    t.equal(second.status, 201, "then the younger, once the older one's session ended");
    await streamEvents(youngerAt, "alpha", ((await second.json()) as { id: string }).id);
    t.same(order, ["older", "younger"], `round ${round}: in arrival order across the replicas`);
  }
});
