/**
 * @module Rotation with a grace window, the same for every key that signs or
 * is checked (the interrupt key, the owner-tag key, an app's API keys): a
 * ring holds the current key, which alone signs, and the previous one with
 * the time it stops being accepted. Verifiers accept the current key, or
 * the previous one until `validUntil`; after it (or with a grace of 0) the
 * old key is refused, by the verifier's own clock, whether or not anyone has
 * removed it yet.
 *
 * On disk (a mounted Secret) a ring is three files: `<key>`,
 * `<key>.previous` and `<key>.previous.valid-until` (ISO 8601). A previous
 * key without its expiry is not accepted (fail closed). Processes read the
 * files through {@link keyRingFromFiles}, which reads them again every few
 * seconds: the kubelet updates a mounted Secret's files in place, so a
 * rotation reaches running pods — and their live sessions — without a
 * restart.
 */
import { existsSync, readFileSync } from "node:fs";

/** How long a rotated key stays accepted unless told otherwise (operator `--key-grace-ms`, `hack/rotate-key.ts --grace-ms`). */
export const DEFAULT_KEY_GRACE_MS = 600_000;

/** How often {@link keyRingFromFiles} reads its files again. */
export const KEY_RING_RELOAD_MS = 5_000;

/** The file suffixes of a ring's previous key and its expiry. */
export const PREVIOUS_SUFFIX = ".previous";
export const VALID_UNTIL_SUFFIX = ".previous.valid-until";

export interface PreviousKey {
  key: string;
  /** Epoch ms after which the key is refused. */
  validUntil: number;
}

export interface KeyRing {
  /** Signs, and verifies. */
  current: string;
  /** Verifies only, until `validUntil`. */
  previous?: PreviousKey;
}

/** Something that gives the ring as it is now (a fixed ring, or one read again from files). */
export type KeyRingSource = () => KeyRing;

/** The keys a verifier accepts at `now`: the current one, and the previous one while its grace lasts. */
export function acceptedKeys(ring: KeyRing, now = Date.now()): string[] {
  return ring.previous !== undefined && now < ring.previous.validUntil ? [ring.current, ring.previous.key] : [ring.current];
}

/**
 * The key to present as a bearer token (the router's key towards engines):
 * the previous one while its window lasts, else the current. A bearer key is
 * checked by many pods that read the rotated Secret at different times
 * (kubelet syncs); during the window every one of them accepts the previous
 * key, whether or not it has read the new ring yet, and after it each has
 * had the window to read the new one. (Signed keys are different: a MAC
 * names its key, so signers use the current key at once.)
 */
export function presentedKey(ring: KeyRing, now = Date.now()): string {
  return ring.previous !== undefined && now < ring.previous.validUntil ? ring.previous.key : ring.current;
}

/** The ring of a fixed key or of a source, as it is now. */
export function ringOf(key: string | KeyRingSource): KeyRing {
  return typeof key === "string" ? { current: key } : key();
}

/** A fixed ring as a source (tests, a key given as a string). */
export function fixedKeyRing(current: string, previous?: PreviousKey): KeyRingSource {
  const ring: KeyRing = previous !== undefined ? { current, previous } : { current };
  return () => ring;
}

/** The ring after replacing its current key with `next`, the old one kept for `graceMs` (0: revoked at once). */
export function rotateRing(ring: KeyRing, next: string, graceMs: number, now = Date.now()): KeyRing {
  return graceMs > 0 ? { current: next, previous: { key: ring.current, validUntil: now + graceMs } } : { current: next };
}

/** `valid-until` as written into a Secret. */
export const formatValidUntil = (ms: number): string => new Date(ms).toISOString();

/** A `valid-until` value; undefined when it is not a time (then the previous key is not accepted). */
export function parseValidUntil(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text.trim());
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * A ring's entries for a Secret (`name`, `name.previous`,
 * `name.previous.valid-until`), plain strings. The previous entries are
 * absent when there is no previous key.
 */
export function keyRingEntries(name: string, ring: KeyRing): Record<string, string> {
  const out: Record<string, string> = { [name]: ring.current };
  if (ring.previous !== undefined) {
    out[name + PREVIOUS_SUFFIX] = ring.previous.key;
    out[name + VALID_UNTIL_SUFFIX] = formatValidUntil(ring.previous.validUntil);
  }
  return out;
}

/** The ring from a Secret's entries (plain strings, see {@link keyRingEntries}); undefined when `name` is absent or empty. */
export function keyRingOf(name: string, entry: (k: string) => string | undefined): KeyRing | undefined {
  const current = entry(name)?.trim() ?? "";
  if (current === "") return undefined;
  const previous = entry(name + PREVIOUS_SUFFIX)?.trim() ?? "";
  const validUntil = parseValidUntil(entry(name + VALID_UNTIL_SUFFIX));
  return previous !== "" && validUntil !== undefined ? { current, previous: { key: previous, validUntil } } : { current };
}

const readIfThere = (file: string): string | undefined => (existsSync(file) ? readFileSync(file, "utf8") : undefined);

/** The ring in `file` and the files beside it; throws when the current key's file is missing or empty. */
export function readKeyRingFiles(file: string): KeyRing {
  const ring = keyRingOf(file, readIfThere);
  if (ring === undefined) throw new Error(`the key file ${file} is missing or empty`);
  return ring;
}

/**
 * A source that reads the ring from `file` (and its `.previous` files) at
 * most every `reloadMs`. A read that fails (a file half-replaced) keeps the
 * last ring read, so a verifier never loses its keys to a race with the kubelet.
 */
export function keyRingFromFiles(file: string, reloadMs = KEY_RING_RELOAD_MS): KeyRingSource {
  let ring = readKeyRingFiles(file);
  let readAt = Date.now();
  return () => {
    const now = Date.now();
    if (now - readAt >= reloadMs) {
      readAt = now;
      try {
        ring = readKeyRingFiles(file);
      } catch {
        // keep the last good ring
      }
    }
    return ring;
  };
}
