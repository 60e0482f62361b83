/**
 * @module One program as one router replica holds it: a {@link ProgramRun}
 * kept current from the program's keys in the programs bucket
 * (program-bucket.ts) by a KV watch.
 *
 * - As *owner* (it holds the lease) its run runs the program: every event is
 *   journaled (`create` of `<id>.e.<n>`, so a stale owner cannot overwrite),
 *   the lease is renewed by revision compare-and-set, a cancellation written
 *   by any replica cancels the run, and a mutation appended to the spec by
 *   any replica is applied. A failed renewal or journal write means another
 *   replica holds the lease: the run is relinquished (its engine sessions
 *   end, it emits nothing more).
 * - As *follower* its run mirrors the journal, so reads through this replica
 *   (status, SSE, long-poll) see what the owner produced.
 */
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { KV, KvWatchEntry } from "@nats-io/kv";
import type { Logger } from "../../../common/src/index.js";
import type { RouterMetrics } from "../metrics.js";
import { encode, parseProgramSpec, programKeys, type CancelRequest, type ProgramLease, type ProgramMutation, type ProgramSpec } from "./program-bucket.js";
import { extendProgram, parseProgram, type ParsedProgram, type ProgramLimits } from "./program-request.js";
import { ProgramRun, type Deduce, type JournaledEvent, type ProgramDispatcher } from "./program-run.js";

export interface ReplicaContext {
  kv: KV;
  log: Logger;
  metrics: RouterMetrics;
  dispatcher: ProgramDispatcher;
  deduce: Deduce;
  /** This router instance (`<router id>/<random>`), the lease holder's name. */
  instance: string;
  leaseMs: number;
  /** Called once the replica has stopped (purged, or lost its lease): the store forgets it. */
  onClosed(replica: ProgramReplica): void;
}

/** Mutations were validated when they were accepted; replaying them must not fail on limits changed since. */
const REPLAY_LIMITS: ProgramLimits = { maxValueBytes: Number.MAX_SAFE_INTEGER, maxCalls: Number.MAX_SAFE_INTEGER };

/** The program the mutations describe. */
export function replay(spec: ProgramSpec): ParsedProgram {
  const [create, ...rest] = spec.mutations;
  if (create?.kind !== "create") throw new Error(`program ${spec.id}: its spec does not start with its creation`);
  let program = parseProgram(spec.config, create.body, REPLAY_LIMITS);
  for (const m of rest) program = applyMutation(spec, program, m);
  return program;
}

function applyMutation(spec: ProgramSpec, program: ParsedProgram, m: ProgramMutation): ParsedProgram {
  if (m.kind === "extend") return extendProgram(spec.config, program, m.body, REPLAY_LIMITS);
  if (m.kind === "criterion") program.finals.set(m.variable, m.criterion);
  return program;
}

/** A compare-and-set lost to another writer (the key changed, or exists already). */
export function isRevisionConflict(err: unknown): boolean {
  return err instanceof JetStreamApiError && (err.code === JetStreamApiCodes.StreamWrongLastSequence || err.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);
}

export class ProgramReplica {
  /** Mutations of the spec applied to the run. */
  private applied: number;
  private readonly mutationWaiters: { count: number; resolve(): void }[] = [];
  /** Journaled events that arrived ahead of their predecessors (a follower applies them in order). */
  private readonly ahead = new Map<number, JournaledEvent>();
  private watch: { stop(): void } | null = null;
  private renewal: NodeJS.Timeout | undefined;
  private journal: Promise<void> = Promise.resolve();
  private closed = false;
  /** When a client last read it through this replica (idle followers are dropped). */
  lastAccess = Date.now();

  private constructor(
    private readonly ctx: ReplicaContext,
    readonly run: ProgramRun,
    spec: ProgramSpec,
    /** The lease revision this replica holds; undefined for a follower. */
    private leaseRevision: number | undefined,
  ) {
    this.applied = spec.mutations.length;
  }

  get id(): string {
    return this.run.id;
  }

  get owner(): boolean {
    return this.leaseRevision !== undefined;
  }

  /**
   * Opens program `id` from the bucket: as owner when `leaseRevision` is the
   * lease revision this instance wrote (a new program, or a claim), else as
   * follower. Null when the bucket has no such program.
   */
  static async open(ctx: ReplicaContext, id: string, leaseRevision?: number): Promise<ProgramReplica | null> {
    const iter = await ctx.kv.watch({ key: programKeys.all(id) });
    const initial: KvWatchEntry[] = [];
    let loaded = false;
    const live: KvWatchEntry[] = [];
    // Set once loaded (a holder: the watch loop below reads it later).
    const made: { replica: ProgramReplica | null } = { replica: null };
    let settle!: () => void;
    const ready = new Promise<void>((r) => (settle = r));
    // Nothing under the program's keys: the watch delivers no initial value at all.
    if ((await ctx.kv.get(programKeys.spec(id)))?.operation !== "PUT") {
      iter.stop();
      return null;
    }
    void (async () => {
      try {
        for await (const entry of iter) {
          if (!loaded) {
            initial.push(entry);
            if (entry.isUpdate || entry.delta === 0) {
              loaded = true;
              settle();
            }
          } else if (made.replica !== null) made.replica.take(entry);
          else live.push(entry);
        }
      } catch (err) {
        ctx.log.warn({ err, program: id }, "program watch failed");
      }
      settle();
      if (made.replica !== null && !made.replica.closed) void made.replica.close("its watch ended");
    })();
    await ready;
    const specEntry = initial.find((e) => e.key === programKeys.spec(id) && e.operation === "PUT");
    if (specEntry === undefined) {
      iter.stop();
      return null;
    }
    // Entries any router may have written: a program whose entries do not make a run is unknown here (404), never a 500.
    let spec: ProgramSpec;
    let run: ProgramRun;
    try {
      spec = parseProgramSpec(specEntry.json());
      const journal = initial
        .filter((e) => e.operation === "PUT" && e.key.startsWith(`${id}.e.`))
        .map((e) => ({ n: Number(e.key.slice(id.length + 3)), j: journaled(e.json()) }))
        .sort((a, b) => a.n - b.n);
      run = new ProgramRun(id, spec.config, replay(spec), ctx.dispatcher, spec.principal, ctx.deduce, { startedAt: spec.startedAt, follower: leaseRevision === undefined });
      // A journal has no gaps (each event is written after the one before); stop at one just in case.
      const contiguous: JournaledEvent[] = [];
      for (const { n, j } of journal) if (n === contiguous.length) contiguous.push(j);
      run.restore(contiguous);
    } catch (err) {
      ctx.log.warn({ err, program: id }, "malformed program entries: the program is treated as unknown");
      iter.stop();
      return null;
    }
    const replica = new ProgramReplica(ctx, run, spec, leaseRevision);
    replica.watch = iter;
    if (replica.owner) replica.own(initial.find((e) => e.key === programKeys.cancel(id) && e.operation === "PUT")?.json<CancelRequest>());
    for (const e of live) replica.take(e);
    made.replica = replica;
    return replica;
  }

  /**
   * A follower becomes the owner (this replica claimed the lease): it reads
   * the rest of the journal and the spec first (the watch may lag), so the
   * run resumes from everything the previous owner wrote.
   */
  async promote(leaseRevision: number): Promise<void> {
    const kv = this.ctx.kv;
    for (;;) {
      const n = this.run.events.length;
      const entry = await kv.get(programKeys.event(this.id, n));
      if (entry?.operation !== "PUT") break;
      this.takeEvent(n, entry.json<JournaledEvent>());
    }
    const spec = await kv.get(programKeys.spec(this.id));
    if (spec?.operation === "PUT") this.applySpec(spec.json<ProgramSpec>());
    const cancel = await kv.get(programKeys.cancel(this.id));
    this.leaseRevision = leaseRevision;
    this.run.takeOver();
    this.own(cancel?.operation === "PUT" ? cancel.json<CancelRequest>() : undefined);
  }

  /** Resolves once the spec's first `count` mutations reached the run (a mutation made through this replica, answered with the run's view). */
  async caughtUp(count: number, timeoutMs = 10_000): Promise<boolean> {
    if (this.applied >= count) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.mutationWaiters.push({
        count,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
      });
    });
  }

  /** Waits until the run has ended (as this replica sees it), or the timeout. */
  async ended(timeoutMs: number): Promise<boolean> {
    if (this.run.done) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        stop();
        resolve(false);
      }, timeoutMs);
      const stop = this.run.subscribe((e) => {
        if (e.type !== "done") return;
        clearTimeout(timer);
        stop();
        resolve(true);
      });
    });
  }

  /**
   * Stops the replica. An owner whose run has not ended relinquishes it and,
   * when `release`, gives its lease up so another replica takes the program
   * over at once (a router shutting down) instead of after the lease expires.
   */
  async close(reason: string, release = false): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.renewal);
    this.watch?.stop();
    if (this.owner && !this.run.done) {
      this.ctx.log.info({ program: this.id, reason }, "program handed over");
      this.run.relinquish();
      this.ctx.metrics.programsLive.dec();
      if (release) {
        await this.journal;
        const lease: ProgramLease = { holder: "", ms: 0, done: false };
        await this.ctx.kv.update(programKeys.lease(this.id), encode(lease), this.leaseRevision!).catch(() => undefined);
      }
    }
    this.leaseRevision = undefined;
    this.ctx.onClosed(this);
  }

  /** Owner: journal the run's events, keep the lease, honour a pending cancellation; then run it. */
  private own(cancel: CancelRequest | undefined): void {
    const run = this.run;
    this.ctx.metrics.programsLive.inc();
    const stop = run.subscribe((event) => {
      const n = run.events.length - 1;
      const j: JournaledEvent = { event };
      if (event.type === "value" && event.call !== null) {
        const engine = run.placedOn.get(event.call);
        const usage = run.usage.get(event.call);
        if (engine !== undefined) j.engine = engine;
        if (usage !== undefined) j.usage = { ...usage };
      }
      this.journal = this.journal.then(() => this.write(n, j));
      if (event.type === "done") {
        stop();
        this.ctx.metrics.programsLive.dec();
        this.ctx.metrics.programs.inc({ outcome: event.state });
        this.ctx.metrics.programSeconds.observe(event.latencyMs / 1000);
        this.journal = this.journal.then(() => this.finishLease(run.finishedAt!));
      }
    });
    const renewEvery = Math.max(100, Math.floor(this.ctx.leaseMs / 3));
    this.renewal = setInterval(() => void this.renew(), renewEvery);
    this.renewal.unref();
    if (run.done) {
      // Taken over after its end was journaled: only the lease still says it runs.
      stop();
      this.ctx.metrics.programsLive.dec();
      this.journal = this.journal.then(() => this.finishLease(run.finishedAt!));
      return;
    }
    run.start();
    if (cancel !== undefined) run.cancel(cancel.reason);
  }

  private async write(n: number, j: JournaledEvent): Promise<void> {
    if (this.closed) return;
    try {
      await this.ctx.kv.create(programKeys.event(this.id, n), encode(j));
    } catch (err) {
      if (isRevisionConflict(err)) await this.close(`event ${n} was journaled by another replica`);
      else {
        this.ctx.log.warn({ err, program: this.id, event: n }, "cannot journal a program event; handing the program over");
        await this.close("journal write failed");
      }
    }
  }

  private async renew(): Promise<void> {
    if (this.closed || this.leaseRevision === undefined) return;
    const lease: ProgramLease = { holder: this.ctx.instance, ms: this.ctx.leaseMs, done: false };
    try {
      this.leaseRevision = await this.ctx.kv.update(programKeys.lease(this.id), encode(lease), this.leaseRevision);
    } catch (err) {
      if (isRevisionConflict(err)) await this.close("its lease was claimed by another replica");
      else this.ctx.log.warn({ err, program: this.id }, "cannot renew a program's lease; retrying");
    }
  }

  private async finishLease(finishedAt: number): Promise<void> {
    clearInterval(this.renewal);
    if (this.closed || this.leaseRevision === undefined) return;
    const lease: ProgramLease = { holder: this.ctx.instance, ms: this.ctx.leaseMs, done: true, finishedAt };
    this.leaseRevision = await this.ctx.kv.update(programKeys.lease(this.id), encode(lease), this.leaseRevision).catch((err: unknown) => {
      this.ctx.log.warn({ err, program: this.id }, "cannot mark a finished program's lease done");
      return this.leaseRevision;
    });
  }

  /** One change under the program's keys, after the initial load; a malformed one is logged and ignored. */
  private take(entry: KvWatchEntry): void {
    try {
      this.takeEntry(entry);
    } catch (err) {
      this.ctx.log.warn({ err, program: this.id, key: entry.key }, "malformed program entry ignored");
    }
  }

  private takeEntry(entry: KvWatchEntry): void {
    if (this.closed) return;
    const id = this.id;
    if (entry.operation !== "PUT") {
      if (entry.key === programKeys.spec(id)) void this.close("the program was purged");
      return;
    }
    if (entry.key === programKeys.spec(id)) this.applySpec(parseProgramSpec(entry.json()));
    else if (entry.key === programKeys.cancel(id)) {
      if (this.owner) this.run.cancel(entry.json<CancelRequest>().reason);
    } else if (entry.key === programKeys.lease(id)) {
      const lease = entry.json<ProgramLease>();
      if (this.owner && lease.holder !== this.ctx.instance) void this.close(`its lease is held by ${lease.holder || "nobody"} now`);
    } else if (entry.key.startsWith(`${id}.e.`) && !this.owner) this.takeEvent(Number(entry.key.slice(id.length + 3)), journaled(entry.json()));
  }

  /** A follower applies journaled events in order, whatever order they arrive in (and each once). */
  private takeEvent(n: number, j: JournaledEvent): void {
    if (n < this.run.events.length) return;
    this.ahead.set(n, j);
    for (let next = this.ahead.get(this.run.events.length); next !== undefined; next = this.ahead.get(this.run.events.length)) {
      this.ahead.delete(this.run.events.length);
      this.run.apply(next);
    }
  }

  private applySpec(spec: ProgramSpec): void {
    for (const m of spec.mutations.slice(this.applied)) {
      try {
        if (m.kind === "extend") this.run.extend(extendProgram(spec.config, this.run.program, m.body, REPLAY_LIMITS));
        else if (m.kind === "criterion") this.run.setCriterion(m.variable, m.criterion);
      } catch (err) {
        this.ctx.log.error({ err, program: this.id }, "a program mutation no longer applies");
      }
    }
    this.applied = Math.max(this.applied, spec.mutations.length);
    for (const w of this.mutationWaiters.splice(0)) {
      if (this.applied >= w.count) w.resolve();
      else this.mutationWaiters.push(w);
    }
  }
}

/** A journaled event as read from the bucket; throws unless it is one. */
function journaled(data: unknown): JournaledEvent {
  const event = (data as { event?: { type?: unknown } } | null)?.event;
  if (event === null || typeof event !== "object" || typeof event.type !== "string") throw new Error("a journaled event must be {event: {type, …}}");
  return data as JournaledEvent;
}
