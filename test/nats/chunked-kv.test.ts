/**
 * Values over one NATS message in a KV bucket (common/protocol/chunked-kv):
 * on a real nats-server with a small `max_payload`, a large value is written
 * in parts and read back whole; a missing or altered part reads as absent,
 * never as a torn value; a purge removes the parts too. And the shared
 * Responses store keeps a conversation larger than the server's default
 * 1 MiB message limit, which it could not before.
 */
import t from "tap";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Kvm } from "@nats-io/kv";
import { getChunked, maxKvValueBytes, purgeChunked, putChunked } from "../../common/src/protocol/index.js";
import { JetStreamResponseStore } from "../../engine-pod/src/server/jetstream-response-store.js";
import { startNatsServer } from "../helpers/nats-server.js";

const SMALL_PAYLOAD = 64 * 1024;

async function open(t: { teardown(fn: () => unknown): void }, url: string): Promise<NatsConnection> {
  const nc = await connect({ servers: url });
  t.teardown(() => nc.close());
  return nc;
}

function text(bytes: number, seed: string): string {
  let s = "";
  for (let i = 0; s.length < bytes; i++) s += `${seed}-${i} `;
  return s.slice(0, bytes);
}

t.test("a value larger than one message is stored in parts and read back whole", async (t) => {
  const nats = await startNatsServer(t, { maxPayloadBytes: SMALL_PAYLOAD });
  const nc = await open(t, nats.url);
  const max = maxKvValueBytes(nc);
  t.ok(max < SMALL_PAYLOAD && max > SMALL_PAYLOAD / 2, `the limit follows the server's max_payload (${max} bytes)`);
  const kv = await new Kvm(nc).create("chunked-test", { history: 1 });
  await t.rejects(kv.put("ns.raw", text(300_000, "x")), /payload|maximum/i, "a plain put of the value is refused by the server");

  const big = text(300_000, "big");
  await putChunked(kv, "ns.big", big, max);
  const keys: string[] = [];
  for await (const k of await kv.keys("ns.big.>")) keys.push(k);
  t.equal(keys.length, Math.ceil(300_000 / max), "one part per message's worth");
  t.equal(new TextDecoder().decode(await getChunked(kv, "ns.big")), big, "joined in order");

  await putChunked(kv, "ns.small", "{\"id\":\"small\"}", max);
  const small = await kv.get("ns.small");
  t.equal(small?.string(), "{\"id\":\"small\"}", "a value that fits is stored as it is");
  t.equal(new TextDecoder().decode(await getChunked(kv, "ns.small")), "{\"id\":\"small\"}");

  const other = text(200_000, "other");
  await putChunked(kv, "ns.big", other, max);
  t.equal(new TextDecoder().decode(await getChunked(kv, "ns.big")), other, "an overwrite reads as the new value, not a mix of the two writes' parts");

  await purgeChunked(kv, "ns.big");
  t.equal(await getChunked(kv, "ns.big"), undefined, "purged");
  const left: string[] = [];
  for await (const k of await kv.keys("ns.big.>")) left.push(k);
  t.equal(left.length, Math.ceil(300_000 / max), "the purge removed the current write's parts; only the overwritten write's remain, for the TTL");
});

t.test("a missing or altered part reads as absent", async (t) => {
  const nats = await startNatsServer(t, { maxPayloadBytes: SMALL_PAYLOAD });
  const nc = await open(t, nats.url);
  const max = maxKvValueBytes(nc);
  const kv = await new Kvm(nc).create("chunked-test", { history: 1 });
  await putChunked(kv, "a", text(150_000, "a"), max);
  const parts: string[] = [];
  for await (const k of await kv.keys("a.>")) parts.push(k);
  await kv.purge(parts.sort()[0]!);
  t.equal(await getChunked(kv, "a"), undefined, "a missing part");

  await putChunked(kv, "b", text(150_000, "b"), max);
  const bParts: string[] = [];
  for await (const k of await kv.keys("b.>")) bParts.push(k);
  const victim = bParts.sort()[1]!;
  const original = (await kv.get(victim))!.value;
  const altered = new Uint8Array(original);
  altered[0] = altered[0]! ^ 1;
  await kv.put(victim, altered);
  t.equal(await getChunked(kv, "b"), undefined, "an altered part fails the hash");
});

t.test("the shared Responses store keeps a conversation over the default 1 MiB message limit", async (t) => {
  const nats = await startNatsServer(t);
  const nc = await open(t, nats.url);
  const store = await JetStreamResponseStore.open(nc, { ttlMs: 60_000, namespace: "team-a" });
  const conversation = Array.from({ length: 8 }, (_, i) => ({ role: (i % 2 === 0 ? "user" : "assistant") as "user" | "assistant", content: text(300_000, `turn${i}`) }));
  const stored = { id: "resp_long", conversation, toolsKey: "[]", response: { id: "resp_long" }, inputItems: [] };
  t.ok(JSON.stringify(stored).length > 2 * 1024 * 1024, "the value is over two messages' worth");
  await store.put(stored);
  t.same(await store.get("resp_long"), stored, "read back whole by any engine");
  t.ok(await store.delete("resp_long"), "deleted");
  t.equal(await store.get("resp_long"), undefined, "and gone");
  const left: string[] = [];
  for await (const k of await (await new Kvm(nc).open("interlace-responses")).keys("team-a.>")) left.push(k);
  t.same(left, [], "with its parts");
});
