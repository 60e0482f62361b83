/**
 * @module The NATS permission layout: for each Interlace identity, exactly the
 * subjects it may publish to and subscribe to. One source for the user JWTs
 * the harness and the chart's key tooling mint, the tests that check a real
 * nats-server enforces them, and the README table.
 *
 * The tenant boundary is the Kubernetes namespace, drawn with per-namespace
 * permissions inside the one `INTERLACE` account rather than an account per
 * namespace. Why: the router, the operator and the shared buckets
 * (`interlace-apps`, `-engines`, `-runners`) serve every namespace, so
 * accounts would need an export/import pair per namespace and bucket, and a
 * new namespace would need a new account JWT pushed to every nats-server
 * (`resolver: MEMORY` trusts only what its config preloads: a restart of the
 * NATS cluster per tenant). Per-namespace subjects and streams give the same
 * isolation for what tenants exchange — calls, results, interrupts — with
 * credentials the operator mints alone: every tenant-owned subject and stream
 * carries the namespace (`interlace.tools.<ns>.…`, `interlace.intr.<ns>.…`,
 * `INTERLACE_TOOLS_<ns>_<pool>`, `INTERLACE_INTR_<ns>`), and each identity
 * below is allowed only its own namespace's.
 *
 * Identities (see README "Security"):
 * - `engine` (one engine pod): publishes calls to its namespace's tool
 *   subjects, reads its own interrupt subjects only through its own durable
 *   consumer, reads runner heartbeats, writes its own engine heartbeat, and
 *   reads and writes its namespace's stored Responses (`interlace-responses`)
 *   and calibrated KV cost models (`interlace-cost-models`).
 * - `engine-pool` (every pod of one EnginePool, what the operator mints: a
 *   Deployment's pod names are not known before the pods exist, and a pod
 *   cannot mount a Secret named after itself): the same, except that the
 *   interrupt consumer may be any engine pod's of its namespace's interrupt
 *   stream (NATS wildcards match whole tokens only, so "pods of this pool"
 *   cannot be expressed, but the stream name carries the namespace). The
 *   engines of a namespace share its interrupt key anyway: one trust domain.
 * - `runner` (one ToolPool): pulls only its pool's work queue, publishes only
 *   results into its own namespace's interrupt subjects
 *   (`interlace.intr.<ns>.*.*`; which results an engine accepts is decided by
 *   the per-call token, see `call-token.ts`), writes its heartbeats and its
 *   pool's effect records.
 * - `router` (release namespace, serves every tenant): reads app configs and
 *   engine heartbeats, writes its presence; no tenant's calls, results or
 *   interrupts (user interrupts reach engines over their HTTP API).
 * - `operator`: manages streams, consumers and buckets (the JetStream API),
 *   writes app configs.
 *
 * Every identity gets its own inbox prefix (`_INBOX_<identity>`), so no client
 * can read another's request replies (JetStream API answers, acks).
 */
import { ALL_KV_EVENTS, KV_EVENTS_PREFIX } from "../protocol/kv-events.js";
import { ALL_WARM_ARRIVALS } from "../protocol/warm-arrivals.js";
import { ALL_QUEUE_HEADS } from "../protocol/queue-heads.js";
import {
  encodeToken,
  INTR_PREFIX,
  intrStream,
  poolStream,
  RESPONSES_BUCKET,
  COST_MODELS_BUCKET,
  RUNNERS_BUCKET,
  RUNNERS_CONSUMER,
  TOOLS_PREFIX,
  enginePodConsumer,
  type PoolRef,
} from "../protocol/subjects.js";
import { EFFECTS_BUCKET, MAXDELIVER_STREAM } from "../protocol/reliability.js";

/** Buckets of the router's protocol (`interlace-apps`, `interlace-engines`, `interlace-routers`, `interlace-programs`, `interlace-reservations`). */
const APPS_BUCKET = "interlace-apps";
const ENGINES_BUCKET = "interlace-engines";
const ROUTERS_BUCKET = "interlace-routers";
const PROGRAMS_BUCKET = "interlace-programs";
const RESERVATIONS_BUCKET = "interlace-reservations";

export type NatsIdentity =
  | { kind: "engine"; namespace: string; pod: string }
  | { kind: "engine-pool"; namespace: string; pool: string }
  | { kind: "runner"; namespace: string; pool: string }
  | { kind: "router" }
  | { kind: "operator" };

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
}

/** A short, subject-safe name of an identity (user JWT name, inbox prefix). */
export function identityName(id: NatsIdentity): string {
  switch (id.kind) {
    case "engine":
      return `engine-${encodeToken(id.namespace)}-${encodeToken(id.pod)}`;
    case "engine-pool":
      return `enginepool-${encodeToken(id.namespace)}-${encodeToken(id.pool)}`;
    case "runner":
      return `runner-${encodeToken(id.namespace)}-${encodeToken(id.pool)}`;
    case "router":
    case "operator":
      return id.kind;
  }
}

/** The inbox prefix an identity's connection must use (`inboxPrefix` connect option). */
export function inboxPrefix(id: NatsIdentity): string {
  return `_INBOX_${identityName(id)}`;
}

/** JetStream API subjects to read a stream's info and to create it (idempotent set-up). */
function streamSetup(stream: string): string[] {
  return [`$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.CREATE.${stream}`];
}

/** Read a KV bucket: open, get, list keys and watch (ordered consumers) below `keys`. */
function kvRead(bucket: string, keys = ">"): string[] {
  const stream = `KV_${bucket}`;
  return [
    `$JS.API.STREAM.INFO.${stream}`,
    `$JS.API.DIRECT.GET.${stream}.$KV.${bucket}.${keys}`,
    `$JS.API.STREAM.MSG.GET.${stream}`,
    `$JS.API.CONSUMER.CREATE.${stream}.*.$KV.${bucket}.${keys}`,
    `$JS.API.CONSUMER.CREATE.${stream}`,
    `$JS.API.CONSUMER.DELETE.${stream}.*`,
    `$JS.API.CONSUMER.INFO.${stream}.*`,
    `$JS.FC.${stream}.>`,
  ];
}

/** Create a KV bucket and write keys below `keys`. */
function kvWrite(bucket: string, keys = ">"): string[] {
  return [`$JS.API.STREAM.CREATE.KV_${bucket}`, `$JS.API.STREAM.UPDATE.KV_${bucket}`, `$KV.${bucket}.${keys}`];
}

/** The permissions of one identity. */
export function natsPermissions(id: NatsIdentity): NatsPermissions {
  const inbox = `${inboxPrefix(id)}.>`;
  switch (id.kind) {
    case "engine":
    case "engine-pool": {
      const ns = encodeToken(id.namespace);
      const intr = intrStream(id.namespace);
      // One pod: its own consumer over its own subjects; a pool: any pod's of its namespace's stream (see the module note).
      const consumer = id.kind === "engine" ? enginePodConsumer(id.pod) : "*";
      const pod = id.kind === "engine" ? encodeToken(id.pod) : "*";
      return {
        publish: [
          "$JS.API.INFO",
          // Calls to any pool of its namespace.
          `${TOOLS_PREFIX}.${ns}.*.*`,
          // Stream metadata (not messages): whether a pool's stream exists. Stream
          // names are single tokens, so this cannot be narrowed to one namespace.
          "$JS.API.STREAM.INFO.*",
          // Agent-to-agent interrupts within its namespace (signed; see interrupt-signature.ts).
          `${INTR_PREFIX}.${ns}.*.*`,
          ...streamSetup(intr),
          // Its own durable interrupt consumer in its namespace's stream, filtered to its own subjects only.
          `$JS.API.CONSUMER.CREATE.${intr}.${consumer}.${INTR_PREFIX}.${ns}.${pod}.>`,
          `$JS.API.CONSUMER.INFO.${intr}.${consumer}`,
          `$JS.API.CONSUMER.MSG.NEXT.${intr}.${consumer}`,
          `$JS.ACK.${intr}.${consumer}.>`,
          // Runner heartbeats (liveness metadata only; the registry watches the whole bucket).
          ...kvRead(RUNNERS_BUCKET),
          ...streamSetup(`KV_${RUNNERS_BUCKET}`),
          ...kvWrite(ENGINES_BUCKET, `${ns}.>`),
          ...streamSetup(`KV_${ENGINES_BUCKET}`),
          // Stored Responses of its namespace only: direct gets by key (no whole-stream reads), writes and purges.
          ...streamSetup(`KV_${RESPONSES_BUCKET}`),
          `$JS.API.DIRECT.GET.KV_${RESPONSES_BUCKET}.$KV.${RESPONSES_BUCKET}.${ns}.>`,
          ...kvWrite(RESPONSES_BUCKET, `${ns}.>`),
          // Calibrated KV cost models of its namespace (shared-cost-models.ts): direct gets by key and writes.
          ...streamSetup(`KV_${COST_MODELS_BUCKET}`),
          `$JS.API.DIRECT.GET.KV_${COST_MODELS_BUCKET}.$KV.${COST_MODELS_BUCKET}.${ns}.>`,
          ...kvWrite(COST_MODELS_BUCKET, `${ns}.>`),
          // KV events (prefix blocks stored and evicted) of its namespace's pools, for the routers' prefix index.
          `${KV_EVENTS_PREFIX}.${ns}.*`,
        ],
        subscribe: [inbox],
      };
    }
    case "runner": {
      const pool: PoolRef = { namespace: id.namespace, name: id.pool };
      const stream = poolStream(pool);
      const keys = `${encodeToken(id.namespace)}.${encodeToken(id.pool)}`;
      return {
        publish: [
          "$JS.API.INFO",
          ...streamSetup(stream),
          `$JS.API.CONSUMER.CREATE.${stream}.${RUNNERS_CONSUMER}.>`,
          `$JS.API.CONSUMER.INFO.${stream}.${RUNNERS_CONSUMER}`,
          `$JS.API.CONSUMER.MSG.NEXT.${stream}.${RUNNERS_CONSUMER}`,
          `$JS.ACK.${stream}.${RUNNERS_CONSUMER}.>`,
          // Results only: an interrupt subject of its own namespace, stored by that namespace's interrupt stream.
          `${INTR_PREFIX}.${encodeToken(id.namespace)}.*.*`,
          ...streamSetup(intrStream(id.namespace)),
          ...streamSetup(`KV_${RUNNERS_BUCKET}`),
          ...kvWrite(RUNNERS_BUCKET, `${keys}.*`),
          ...streamSetup(`KV_${EFFECTS_BUCKET}`),
          ...kvWrite(EFFECTS_BUCKET, `${keys}.>`),
          ...kvRead(EFFECTS_BUCKET, `${keys}.>`),
          // Calls that ran out of deliveries: their pool's advisories, the call
          // message (to answer it) and its removal from the queue.
          ...streamSetup(MAXDELIVER_STREAM),
          `$JS.API.CONSUMER.CREATE.${MAXDELIVER_STREAM}.${stream}.$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${stream}.${RUNNERS_CONSUMER}`,
          `$JS.API.CONSUMER.INFO.${MAXDELIVER_STREAM}.${stream}`,
          `$JS.API.CONSUMER.MSG.NEXT.${MAXDELIVER_STREAM}.${stream}`,
          `$JS.ACK.${MAXDELIVER_STREAM}.${stream}.>`,
          `$JS.API.STREAM.MSG.GET.${stream}`,
          `$JS.API.DIRECT.GET.${stream}`,
          `$JS.API.STREAM.MSG.DELETE.${stream}`,
        ],
        subscribe: [inbox],
      };
    }
    case "router":
      return {
        publish: [
          "$JS.API.INFO",
          // No interrupt subject: user interrupts reach engines over their HTTP API, and the router holds no interrupt key.
          ...kvRead(APPS_BUCKET),
          ...kvRead(ENGINES_BUCKET),
          ...streamSetup(`KV_${APPS_BUCKET}`),
          ...streamSetup(`KV_${ENGINES_BUCKET}`),
          ...streamSetup(`KV_${ROUTERS_BUCKET}`),
          ...kvRead(ROUTERS_BUCKET),
          ...kvWrite(ROUTERS_BUCKET),
          // Programs: every replica reads, writes and purges them (router/src/programs/program-bucket.ts).
          ...kvRead(PROGRAMS_BUCKET),
          ...kvWrite(PROGRAMS_BUCKET),
          ...kvRead(RUNNERS_BUCKET),
          // Placements in flight, shared by every front door (router/src/shared-reservations.ts).
          ...streamSetup(`KV_${RESERVATIONS_BUCKET}`),
          ...kvRead(RESERVATIONS_BUCKET),
          ...kvWrite(RESERVATIONS_BUCKET),
          // The app sessions it placed, for the other replicas' hot-prefix warming (router/src/warm-arrivals.ts).
          ALL_WARM_ARRIVALS,
          // Its capacity queues' oldest requests, so the replicas place queued requests in one order (router/src/queue-heads.ts).
          ALL_QUEUE_HEADS,
        ],
        // Every pool's KV events: a router places on all pools (router/src/prefix-index.ts); the other replicas' placed sessions and queue heads.
        subscribe: [inbox, ALL_KV_EVENTS, ALL_WARM_ARRIVALS, ALL_QUEUE_HEADS],
      };
    case "operator":
      return {
        // Stream, consumer and bucket management of every pool; app configs.
        publish: ["$JS.API.>", ...kvWrite(APPS_BUCKET)],
        subscribe: [inbox],
      };
  }
}
