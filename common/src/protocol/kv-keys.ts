/**
 * @module The keys of a JetStream KV bucket under a filter, each once, from
 * the server's subject index (stream info with a subjects filter: one
 * snapshot, paged by the client for large buckets).
 *
 * Not `kv.keys()`: it reads the bucket with a live consumer, so a key
 * rewritten while it runs can come back twice (its older revision, then the
 * new one) or not at all (the consumer found nothing pending while the
 * bucket replaced the key's only revision; measured on nats-server 2.x in
 * test/nats/kv-keys.test.ts). A reader that sums or counts per key (router
 * presences' held requests, live runners) would count that key twice, or
 * miss it. The index also lists keys whose last operation is a delete or a
 * purge (their marker is a message): every caller reads each key and skips
 * what is not a value.
 */
import type { Bucket, KV } from "@nats-io/kv";

export async function kvKeys(kv: KV, filter = ">"): Promise<string[]> {
  // The KV interface hides the stream; every KV that Kvm opens is a Bucket.
  const b = kv as Bucket;
  const info = await b.jsm.streams.info(b.stream, { subjects_filter: b.fullKeyName(b.encodeKey(filter)) });
  return Object.keys(info.state.subjects ?? {}).map((subject) => b.decodeKey(subject.substring(b.prefixLen)));
}
