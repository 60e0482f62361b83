/**
 * @module Values larger than one NATS message in a JetStream KV bucket.
 *
 * A KV value is one message, so it cannot exceed the server's `max_payload`
 * (1 MiB by default). A value that fits is written as it is. A larger one is
 * cut into parts under `<key>.p.<hash>.<i>`, written first, and the key then
 * gets a small manifest naming the parts and the whole value's SHA-256. The
 * part keys sit under the value's own key, so an identity allowed `<ns>.>`
 * may write them, and they carry the content hash, so a reader never joins
 * parts of two different writes. A reader that finds a part missing (the
 * parts expired a moment before the manifest, or a delete is under way) or
 * a hash that does not match reports the value as absent, never a torn one.
 *
 * Why not the JetStream object store: it needs a bucket (and permissions)
 * per use, and its TTL and delete are its own; the KV's TTL, delete and
 * per-namespace key permissions already govern these values.
 */
import { createHash } from "node:crypto";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";

/** Room left in each message for headers the client or server adds. */
const HEADROOM_BYTES = 4096;
/** What a manifest looks like; no stored JSON value of this project starts with this key. */
const MANIFEST_MARK = "interlaceChunkedValue";

interface ChunkManifest {
  [MANIFEST_MARK]: 1;
  parts: number;
  bytes: number;
  sha256: string;
}

/** The largest value one KV message carries on this connection's server. */
export function maxKvValueBytes(nc: NatsConnection): number {
  const maxPayload = nc.info?.max_payload ?? 1_048_576;
  return Math.max(1024, maxPayload - HEADROOM_BYTES);
}

function partKey(key: string, sha256: string, i: number): string {
  return `${key}.p.${sha256.slice(0, 16)}.${i}`;
}

function asManifest(data: Uint8Array): ChunkManifest | undefined {
  // A manifest is a few dozen bytes; anything large is a plain value.
  if (data.length > 256) return undefined;
  try {
    const value = JSON.parse(new TextDecoder().decode(data)) as Partial<ChunkManifest> | null;
    if (value === null || typeof value !== "object" || value[MANIFEST_MARK] !== 1) return undefined;
    const { parts, bytes, sha256 } = value;
    if (!Number.isInteger(parts) || parts! < 1 || !Number.isInteger(bytes) || typeof sha256 !== "string" || !/^[0-9a-f]{64}$/.test(sha256)) return undefined;
    return value as ChunkManifest;
  } catch {
    return undefined;
  }
}

/** Writes `value` under `key`, in parts when it is over `maxBytes`. */
export async function putChunked(kv: KV, key: string, value: string | Uint8Array, maxBytes: number): Promise<void> {
  const data = typeof value === "string" ? new TextEncoder().encode(value) : value;
  if (data.length <= maxBytes) {
    await kv.put(key, data);
    return;
  }
  const sha256 = createHash("sha256").update(data).digest("hex");
  const parts = Math.ceil(data.length / maxBytes);
  for (let i = 0; i < parts; i++) await kv.put(partKey(key, sha256, i), data.subarray(i * maxBytes, (i + 1) * maxBytes));
  const manifest: ChunkManifest = { [MANIFEST_MARK]: 1, parts, bytes: data.length, sha256 };
  await kv.put(key, JSON.stringify(manifest));
}

/** The value under `key`, joined from its parts when it was written in parts; undefined when absent or incomplete. */
export async function getChunked(kv: KV, key: string): Promise<Uint8Array | undefined> {
  const entry = await kv.get(key);
  // A delete leaves a marker entry until it expires too.
  if (entry === null || entry.operation !== "PUT") return undefined;
  const manifest = asManifest(entry.value);
  if (manifest === undefined) return entry.value;
  const data = new Uint8Array(manifest.bytes);
  let at = 0;
  for (let i = 0; i < manifest.parts; i++) {
    const part = await kv.get(partKey(key, manifest.sha256, i));
    if (part === null || part.operation !== "PUT" || at + part.value.length > manifest.bytes) return undefined;
    data.set(part.value, at);
    at += part.value.length;
  }
  if (at !== manifest.bytes || createHash("sha256").update(data).digest("hex") !== manifest.sha256) return undefined;
  return data;
}

/** Removes `key` and, when it was written in parts, its parts. */
export async function purgeChunked(kv: KV, key: string): Promise<void> {
  const entry = await kv.get(key);
  const manifest = entry !== null && entry.operation === "PUT" ? asManifest(entry.value) : undefined;
  await kv.purge(key);
  if (manifest === undefined) return;
  for (let i = 0; i < manifest.parts; i++) await kv.purge(partKey(key, manifest.sha256, i));
}
