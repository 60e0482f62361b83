/**
 * @module The programs of every router replica, by id, kept in the programs
 * bucket (program-bucket.ts states the design: shared state in JetStream
 * KV, one lease holder runs each program). This replica:
 * - creates a program by writing its spec and its lease, then runs it;
 * - answers any program: its own runs, or a follower replica opened from the
 *   bucket (dropped again when nobody has read it for a minute);
 * - appends mutations (more calls, criteria) to a program's spec with a
 *   revision compare-and-set; the owner applies them from its watch;
 * - cancels: its own run directly, another replica's by writing the
 *   program's `cancel` key, then waits for the owner's `done`;
 * - watches every lease and claims (compare-and-set) a program whose lease
 *   went unrenewed for as long as its holder said it lasts (its `leaseMs`),
 *   or that its holder gave up when shutting
 *   down, and resumes it;
 * - purges programs `keepMs` after they ended, and cancels an open program
 *   nobody added to or asked for a value for `keepMs`.
 * A program belongs to the API key that created it: another key gets 403.
 * At most `max` programs run on one replica at once (429).
 */
import { randomBytes } from "node:crypto";
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { Logger } from "../../../common/src/index.js";
import { ErrorCode } from "../../../common/src/index.js";
import { kvKeys, type AppConfig } from "../../../common/src/protocol/index.js";
import { HttpError, notFound, RouterCode } from "../errors.js";
import { KvWatch } from "../kv-watch.js";
import type { RouterMetrics } from "../metrics.js";
import { deduceObjectives, latencyOnly } from "./dag.js";
import { encode, isProgramId, newProgramId, programKeys, type ProgramLease, type ProgramMutation, type ProgramSpec } from "./program-bucket.js";
import { isRevisionConflict, ProgramReplica, type ReplicaContext } from "./program-replica.js";
import type { ProgramDispatcher } from "./program-run.js";

export interface ProgramStoreOptions {
  routerId: string;
  max: number;
  keepMs: number;
  retryAfterSeconds: number;
  /** Deduce objectives from the DAG (Parrot §5.2); off, every request is latency-critical on its own. */
  deduction: boolean;
  /** A program whose lease went unrenewed this long is taken over by another replica. */
  leaseMs: number;
}

/** How long a follower replica nobody reads is kept. */
const FOLLOWER_IDLE_MS = 60_000;
const MUTATION_RETRIES = 20;

interface SeenLease {
  lease: ProgramLease;
  revision: number;
  /** Local time the revision was first seen: the lease expires its `ms` after, unless renewed (no clock is compared across machines). */
  seenAt: number;
}

export class ProgramStore {
  /** This router process: a restarted router with the same id is another instance. */
  readonly instance: string;
  private readonly replicas = new Map<string, ProgramReplica>();
  private readonly opening = new Map<string, Promise<ProgramReplica | null>>();
  private readonly leases = new Map<string, SeenLease>();
  private readonly claiming = new Set<string>();
  private kv: KV | undefined;
  /** Largest value one bucket entry may hold (the NATS server's max_payload, less headroom). */
  private maxEntryBytes = Number.POSITIVE_INFINITY;
  private leaseWatch: KvWatch | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private closing = false;

  constructor(
    private readonly options: ProgramStoreOptions,
    private readonly metrics: RouterMetrics,
    private readonly dispatcher: ProgramDispatcher,
    private readonly log: Logger,
  ) {
    this.instance = `${options.routerId}/${randomBytes(4).toString("hex")}`;
  }

  /**
   * Starts serving from the bucket: the lease watch, the takeover scan, the
   * sweep. `maxEntryBytes`: the largest entry the server takes (one message).
   */
  async attach(kv: KV, maxEntryBytes: number): Promise<void> {
    this.kv = kv;
    this.maxEntryBytes = maxEntryBytes;
    this.leaseWatch = new KvWatch(kv, (e) => this.seeLease(e), this.log, programKeys.leases);
    // Not waiting for `loaded`: a lease seen later is simply seen later (its expiry counts from then).
    await this.leaseWatch.start();
    const scan = setInterval(() => void this.scan(), Math.max(100, Math.floor(this.options.leaseMs / 3)));
    const sweep = setInterval(() => this.sweep(), Math.min(10_000, this.options.keepMs));
    scan.unref();
    sweep.unref();
    this.timers.push(scan, sweep);
  }

  /** A new program owned by `principal` (the creating API key's), running on this replica. */
  async create(config: AppConfig, body: unknown, principal: string): Promise<ProgramReplica> {
    const running = [...this.replicas.values()].filter((r) => r.owner && !r.run.done).length;
    if (running >= this.options.max) {
      throw new HttpError(429, "capacity", `this router runs ${running} programs (--max-programs); retry later`, { "Retry-After": String(this.options.retryAfterSeconds) });
    }
    const kv = this.bucket();
    const id = newProgramId();
    const spec: ProgramSpec = { id, config, principal, startedAt: Date.now(), mutations: [{ kind: "create", body }] };
    await kv.create(programKeys.spec(id), this.encodeSpec(spec));
    const lease: ProgramLease = { holder: this.instance, ms: this.options.leaseMs, done: false };
    const revision = await kv.create(programKeys.lease(id), encode(lease));
    const replica = await ProgramReplica.open(this.context(), id, revision);
    if (replica === null) throw new Error(`program ${id} vanished from the bucket as it was created`);
    this.replicas.set(id, replica);
    return replica;
  }

  /**
   * The spec as one bucket entry, or a 413 that says why: the spec holds the
   * create body and every `calls` body so far, and one entry is one NATS
   * message, so a program cannot grow past the server's max_payload. (The
   * store refuses rather than failing the write later: a spec that could
   * not be written would strand the program.)
   */
  private encodeSpec(spec: ProgramSpec): string {
    const data = encode(spec);
    const bytes = Buffer.byteLength(data);
    if (bytes > this.maxEntryBytes) {
      throw new HttpError(
        413,
        ErrorCode.PayloadTooLarge,
        `program ${spec.id}: its request bodies together would take ${bytes} bytes in the shared program store, over its ${this.maxEntryBytes}-byte limit (one NATS message, the server's max_payload); send smaller inputs, or start a new program for more calls`,
      );
    }
    return data;
  }

  /** The program of an app owned by `principal`, from any replica; a 404 that says why, or a 403 for another key's program. */
  async get(app: AppConfig, id: string, principal: string): Promise<ProgramReplica> {
    const replica = isProgramId(id) ? await this.replica(id) : null;
    if (replica !== null && replica.run.config.namespace === app.namespace && replica.run.config.name === app.name) {
      replica.lastAccess = Date.now();
      if (replica.run.owner === principal) return replica;
      this.metrics.rejected.inc({ code: RouterCode.Forbidden });
      throw new HttpError(403, RouterCode.Forbidden, `program "${id}" belongs to another API key: only the key that created it may read, extend or cancel it`);
    }
    throw notFound(`no program "${id}" of AgentApp ${app.namespace}/${app.name} (unknown, or finished more than ${this.options.keepMs} ms ago)`);
  }

  /**
   * Appends a mutation to the program's spec (compare-and-set on its
   * revision, retried on a concurrent one); `check` validates it against the
   * program as the spec now describes it and throws the client's error.
   * Resolves once this replica's run has applied it.
   */
  async mutate(replica: ProgramReplica, mutation: ProgramMutation, check: (spec: ProgramSpec) => void = () => undefined): Promise<void> {
    const kv = this.bucket();
    for (let attempt = 0; ; attempt++) {
      const entry = await kv.get(programKeys.spec(replica.id));
      if (entry?.operation !== "PUT") throw notFound(`program "${replica.id}" was purged`);
      const spec = entry.json<ProgramSpec>();
      check(spec);
      spec.mutations.push(mutation);
      try {
        await kv.update(programKeys.spec(replica.id), this.encodeSpec(spec), entry.revision);
      } catch (err) {
        if (isRevisionConflict(err) && attempt < MUTATION_RETRIES) continue;
        throw err;
      }
      if (!(await replica.caughtUp(spec.mutations.length))) throw new HttpError(503, RouterCode.NotReady, `program ${replica.id}: the change was stored but this replica has not seen it yet; read the program again`);
      return;
    }
  }

  /** Cancels the program wherever it runs; resolves when it has ended (true when this asked for its end before it ended). */
  async cancel(replica: ProgramReplica, reason: string): Promise<boolean> {
    if (replica.run.done) return false;
    if (replica.owner) return replica.run.cancel(reason);
    await this.bucket().put(programKeys.cancel(replica.id), encode({ reason }));
    // The owner cancels at once; a dead owner's program is claimed within a lease and cancelled by its new owner.
    if (!(await replica.ended(2 * this.options.leaseMs + 10_000))) throw new HttpError(503, RouterCode.NotReady, `program ${replica.id}: cancellation asked for, but the replica running it has not confirmed it yet; read the program again`);
    return true;
  }

  /**
   * Stops the scan and the sweep and hands this replica's running programs
   * over: their engine sessions end here, and their leases are released so
   * another replica resumes them at once.
   */
  async close(): Promise<void> {
    this.closing = true;
    for (const t of this.timers) clearInterval(t);
    this.leaseWatch?.stop();
    await Promise.all([...this.replicas.values()].map((r) => r.close("the router is shutting down", true)));
  }

  private bucket(): KV {
    if (this.kv === undefined) throw new HttpError(503, RouterCode.NotReady, "router not ready: the programs bucket is not open yet");
    return this.kv;
  }

  private context(): ReplicaContext {
    return {
      kv: this.bucket(),
      log: this.log,
      metrics: this.metrics,
      dispatcher: this.dispatcher,
      deduce: this.options.deduction ? deduceObjectives : (dag) => latencyOnly(dag),
      instance: this.instance,
      leaseMs: this.options.leaseMs,
      onClosed: (r) => {
        if (this.replicas.get(r.id) === r) this.replicas.delete(r.id);
      },
    };
  }

  /** This replica's view of a program: its own run, or a follower opened from the bucket. */
  private async replica(id: string): Promise<ProgramReplica | null> {
    const held = this.replicas.get(id);
    if (held !== undefined) return held;
    let opening = this.opening.get(id);
    if (opening === undefined) {
      opening = ProgramReplica.open(this.context(), id).finally(() => this.opening.delete(id));
      this.opening.set(id, opening);
      const replica = await opening;
      if (replica !== null) this.replicas.set(id, replica);
      return replica;
    }
    return opening;
  }

  private seeLease(entry: KvWatchEntry): void {
    const id = entry.key.slice(0, -".lease".length);
    if (entry.operation !== "PUT") {
      this.leases.delete(id);
      return;
    }
    let lease: ProgramLease;
    try {
      lease = entry.json<ProgramLease>();
    } catch {
      return;
    }
    // A lease written before leases carried their duration lasts this replica's.
    if (typeof lease.ms !== "number") lease = { ...lease, ms: this.options.leaseMs };
    const seen = this.leases.get(id);
    if (seen?.revision !== entry.revision) this.leases.set(id, { lease, revision: entry.revision, seenAt: Date.now() });
  }

  /** Claims each program whose lease expired (or was given up) and resumes it; purges programs ended `keepMs` ago. */
  private async scan(): Promise<void> {
    if (this.closing || this.kv === undefined) return;
    const now = Date.now();
    for (const [id, seen] of this.leases) {
      if (seen.lease.done) {
        if (seen.lease.finishedAt !== undefined && seen.lease.finishedAt + this.options.keepMs < now) void this.purge(id);
        continue;
      }
      if (seen.lease.holder === this.instance || this.claiming.has(id)) continue;
      if (now - seen.seenAt < seen.lease.ms) continue;
      this.claiming.add(id);
      void this.claim(id, seen).finally(() => this.claiming.delete(id));
    }
  }

  private async claim(id: string, seen: SeenLease): Promise<void> {
    const kv = this.bucket();
    const lease: ProgramLease = { holder: this.instance, ms: this.options.leaseMs, done: false };
    let revision: number;
    try {
      revision = await kv.update(programKeys.lease(id), encode(lease), seen.revision);
    } catch (err) {
      // Renewed meanwhile, or another replica claimed it first.
      if (!isRevisionConflict(err)) this.log.warn({ err, program: id }, "cannot claim a program's lease");
      return;
    }
    this.log.info({ program: id, from: seen.lease.holder || "nobody" }, "taking a program over");
    try {
      // A follower this replica holds becomes the run, so its readers keep reading it.
      const held = this.replicas.get(id);
      if (held !== undefined && !held.owner) await held.promote(revision);
      else {
        const replica = await ProgramReplica.open(this.context(), id, revision);
        if (replica !== null) this.replicas.set(id, replica);
      }
    } catch (err) {
      this.log.error({ err, program: id }, "cannot resume a program taken over; releasing its lease");
      await kv.update(programKeys.lease(id), encode({ holder: "", ms: 0, done: false } satisfies ProgramLease), revision).catch(() => undefined);
    }
  }

  private async purge(id: string): Promise<void> {
    const kv = this.bucket();
    this.leases.delete(id);
    await this.replicas.get(id)?.close("purged");
    try {
      const keys = await kvKeys(kv, programKeys.all(id));
      // The spec last: a replica opening the program meanwhile sees it gone or whole.
      for (const k of keys.filter((k) => k !== programKeys.spec(id))) await kv.purge(k);
      await kv.purge(programKeys.spec(id));
    } catch (err) {
      this.log.warn({ err, program: id }, "cannot purge a finished program");
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const replica of this.replicas.values()) {
      const run = replica.run;
      if (replica.owner) {
        if (!run.done && run.program.open && run.lastActivity < now - this.options.keepMs) run.cancel(`open and untouched for ${this.options.keepMs} ms (--program-keep-ms)`);
      } else if (!run.watched && replica.lastAccess < now - FOLLOWER_IDLE_MS) void replica.close("idle");
    }
  }
}
