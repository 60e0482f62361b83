/**
 * @module The keys of a JetStream KV bucket under a filter, each once.
 *
 * `kv.keys()` reads the bucket with a live consumer until nothing is
 * pending, so a key written while it runs can come back twice (its older
 * revision, then the new one). A reader that sums or counts per key (router
 * presences' held requests, live runners) would count that key twice.
 */
import type { KV } from "@nats-io/kv";

export async function kvKeys(kv: KV, filter = ">"): Promise<string[]> {
  const keys = new Set<string>();
  for await (const k of await kv.keys(filter)) keys.add(k);
  return [...keys];
}
