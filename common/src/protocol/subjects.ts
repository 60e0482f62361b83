/**
 * @module NATS subject, stream, consumer and bucket names of the Interlace
 * protocol:
 *
 * - `interlace.tools.<namespace>.<pool>.<tool>` — calls. One JetStream
 *   work-queue stream per pool (`INTERLACE_TOOLS_<namespace>_<pool>`) with one
 *   durable pull consumer (`runners`) that every runner of the pool pulls from.
 *   A stream per pool (rather than one stream for all tools) gives each pool its
 *   own limits and lifetime (deleted with its ToolPool), and work-queue
 *   retention forbids overlapping consumers anyway.
 * - `interlace.intr.<namespace>.<engine-pod>.<session>` — tool results and
 *   user / agent interrupts for a session, captured by its namespace's
 *   work-queue stream `INTERLACE_INTR_<namespace>` so a result published while
 *   its engine is reconnecting is kept; each engine pod reads its own subjects
 *   through the durable consumer `engine-<pod>` of that stream. One stream per
 *   namespace (the tenant) because NATS permissions match whole tokens: with
 *   the namespace in the stream name, "this namespace's consumers" is one
 *   wildcard (`$JS.API.CONSUMER.MSG.NEXT.INTERLACE_INTR_<ns>.*`), so an
 *   EnginePool's identity can pull and ack only its own tenant's interrupts.
 * - KV bucket `interlace-runners` — runner heartbeats, key
 *   `<namespace>.<pool>.<runner>`; engines read it to fail fast when a pool has
 *   no live runner.
 *
 * Variable parts are encoded into single subject tokens ({@link encodeToken}):
 * NATS tokens cannot hold `.`, `*`, `>` or whitespace.
 */

export const TOOLS_PREFIX = "interlace.tools";
export const INTR_PREFIX = "interlace.intr";
/** The single interrupt stream of releases before namespaced subjects; removed by the operator (its subjects overlap every namespace's). */
export const LEGACY_INTR_STREAM = "INTERLACE_INTR";
export const RUNNERS_BUCKET = "interlace-runners";
/** Stored Responses API turns, one key per engine response id (every engine of every pool reads and writes it). */
export const RESPONSES_BUCKET = "interlace-responses";
/** Calibrated KV cost models, one key per namespace and measured setting (engines of a namespace adopt each other's). */
export const COST_MODELS_BUCKET = "interlace-cost-models";
export const RUNNERS_CONSUMER = "runners";

/**
 * Encodes any string as one subject token: characters outside
 * `[A-Za-z0-9_-]` become `=XX` (UTF-8 bytes, hex). `=` is legal both in
 * subjects and in KV keys (which reject `%`). Reversible with {@link decodeToken}.
 */
export function encodeToken(value: string): string {
  if (value.length === 0) return "=00";
  let out = "";
  for (const ch of value) {
    if (/^[A-Za-z0-9_-]$/.test(ch)) out += ch;
    else for (const byte of Buffer.from(ch, "utf8")) out += `=${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Inverse of {@link encodeToken}; throws on a malformed escape. */
export function decodeToken(token: string): string {
  if (token === "=00") return "";
  if (!/^(?:[A-Za-z0-9_-]|=[0-9A-F]{2})*$/.test(token)) throw new Error(`not an encoded token: ${token}`);
  return decodeURIComponent(token.replace(/=/g, "%"));
}

/** Stream and consumer names allow fewer characters than tokens: keep `[A-Za-z0-9_-]`, map the rest to `_`. */
function nameSafe(value: string): string {
  return value.replace(/[^A-Za-z0-9_-]/g, "_");
}

export interface PoolRef {
  namespace: string;
  name: string;
}

/** `interlace.tools.<ns>.<pool>.<tool>` */
export function toolSubject(pool: PoolRef, tool: string): string {
  return `${TOOLS_PREFIX}.${encodeToken(pool.namespace)}.${encodeToken(pool.name)}.${encodeToken(tool)}`;
}

/** Every call subject of a pool: the pool stream's subject and its consumer's filter. */
export function poolSubjects(pool: PoolRef): string {
  return `${TOOLS_PREFIX}.${encodeToken(pool.namespace)}.${encodeToken(pool.name)}.>`;
}

/** The tool name of a call subject, or null when it is not one of `pool`'s. */
export function toolFromSubject(pool: PoolRef, subject: string): string | null {
  const prefix = `${TOOLS_PREFIX}.${encodeToken(pool.namespace)}.${encodeToken(pool.name)}.`;
  if (!subject.startsWith(prefix)) return null;
  const rest = subject.slice(prefix.length);
  if (rest.length === 0 || rest.includes(".")) return null;
  try {
    return decodeToken(rest);
  } catch {
    return null;
  }
}

/** `INTERLACE_TOOLS_<ns>_<pool>`; distinct pools may only collide if their names differ in characters outside `[A-Za-z0-9_-]`, which Kubernetes names do not have. */
export function poolStream(pool: PoolRef): string {
  return `INTERLACE_TOOLS_${nameSafe(pool.namespace)}_${nameSafe(pool.name)}`;
}

/** `INTERLACE_INTR_<ns>`: the interrupt stream of one namespace (tenant). */
export function intrStream(namespace: string): string {
  return `INTERLACE_INTR_${nameSafe(namespace)}`;
}

/** Every interrupt subject of one namespace: its stream's subjects. */
export function namespaceIntrSubjects(namespace: string): string {
  return `${INTR_PREFIX}.${encodeToken(namespace)}.>`;
}

/** Where an engine pod lives: its namespace (tenant) and its name. */
export interface EnginePodRef {
  namespace: string;
  pod: string;
}

/** `interlace.intr.<ns>.<pod>.<session>` */
export function interruptSubject(engine: EnginePodRef, sessionId: string): string {
  return `${INTR_PREFIX}.${encodeToken(engine.namespace)}.${encodeToken(engine.pod)}.${encodeToken(sessionId)}`;
}

/** Every interrupt subject of one engine pod. */
export function enginePodSubjects(engine: EnginePodRef): string {
  return `${INTR_PREFIX}.${encodeToken(engine.namespace)}.${encodeToken(engine.pod)}.>`;
}

/** The durable consumer (of its namespace's {@link intrStream}) through which an engine pod reads its interrupts. */
export function enginePodConsumer(enginePod: string): string {
  return `engine-${nameSafe(enginePod)}`;
}

/** Parses `interlace.intr.<ns>.<pod>.<session>`; null for anything else. */
export function parseInterruptSubject(subject: string): { namespace: string; enginePod: string; sessionId: string } | null {
  const parts = subject.split(".");
  if (parts.length !== 5 || `${parts[0]}.${parts[1]}` !== INTR_PREFIX) return null;
  try {
    return { namespace: decodeToken(parts[2]!), enginePod: decodeToken(parts[3]!), sessionId: decodeToken(parts[4]!) };
  } catch {
    return null;
  }
}

/** KV key of a runner heartbeat. */
export function runnerKey(pool: PoolRef, runnerId: string): string {
  return `${encodeToken(pool.namespace)}.${encodeToken(pool.name)}.${encodeToken(runnerId)}`;
}

/** Parses a {@link runnerKey}; null for anything else. */
export function parseRunnerKey(key: string): { pool: PoolRef; runnerId: string } | null {
  const parts = key.split(".");
  if (parts.length !== 3) return null;
  try {
    return { pool: { namespace: decodeToken(parts[0]!), name: decodeToken(parts[1]!) }, runnerId: decodeToken(parts[2]!) };
  } catch {
    return null;
  }
}

/** The JetStream advisory the server sends when a call message ran out of deliveries. */
export function maxDeliveriesAdvisorySubject(stream = "*", consumer = "*"): string {
  return `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.${consumer}`;
}

/** The de-duplication key of a call message: publishing the same call twice stores it once. */
export function callMsgId(enginePod: string, sessionId: string, callId: string): string {
  return `call:${encodeToken(enginePod)}:${encodeToken(sessionId)}:${encodeToken(callId)}`;
}

/** The de-duplication key of a call's result: a redelivered call's second result is dropped by JetStream. */
export function resultMsgId(callMsgIdValue: string): string {
  return `result:${callMsgIdValue}`;
}
