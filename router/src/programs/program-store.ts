/**
 * @module The programs a router replica runs, by id. A program lives in the
 * replica that accepted it (its values flow inside that process), so its id
 * names the replica: `<router id>~<random>`; another replica answers 404
 * saying which router to ask. A program belongs to the API key that created
 * it: another key gets 403. Finished programs stay readable for `keepMs`,
 * then are dropped; an open program nobody has touched for `keepMs` is
 * cancelled; at most `max` are held at once.
 */
import { randomBytes } from "node:crypto";
import type { AppConfig } from "../../../common/src/protocol/index.js";
import { HttpError, notFound, RouterCode } from "../errors.js";
import type { RouterMetrics } from "../metrics.js";
import { deduceObjectives, latencyOnly } from "./dag.js";
import type { ParsedProgram } from "./program-request.js";
import { ProgramRun, type ProgramDispatcher } from "./program-run.js";

export interface ProgramStoreOptions {
  routerId: string;
  max: number;
  keepMs: number;
  retryAfterSeconds: number;
  /** Deduce objectives from the DAG (Parrot §5.2); off, every request is latency-critical on its own. */
  deduction: boolean;
}

export class ProgramStore {
  private readonly runs = new Map<string, ProgramRun>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly options: ProgramStoreOptions,
    private readonly metrics: RouterMetrics,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(10_000, options.keepMs));
    this.sweeper.unref();
  }

  /** A new run owned by `owner` (the creating API key's principal). */
  create(config: AppConfig, program: ParsedProgram, dispatcher: ProgramDispatcher, owner: string): ProgramRun {
    this.sweep();
    if (this.runs.size >= this.options.max) {
      throw new HttpError(429, "capacity", `this router holds ${this.runs.size} programs (--max-programs); retry later`, { "Retry-After": String(this.options.retryAfterSeconds) });
    }
    const id = `${this.options.routerId}~${randomBytes(6).toString("hex")}`;
    const run = new ProgramRun(id, config, program, dispatcher, owner, this.options.deduction ? deduceObjectives : (dag) => latencyOnly(dag));
    this.runs.set(id, run);
    this.metrics.programsLive.inc();
    const stop = run.subscribe((e) => {
      if (e.type !== "done") return;
      stop();
      this.metrics.programsLive.dec();
      this.metrics.programs.inc({ outcome: e.state });
      this.metrics.programSeconds.observe(e.latencyMs / 1000);
    });
    return run;
  }

  /** The program of an app owned by `principal`; a 404 that says why, or a 403 for another key's program. */
  get(app: AppConfig, id: string, principal: string): ProgramRun {
    const run = this.runs.get(id);
    if (run !== undefined && run.config.namespace === app.namespace && run.config.name === app.name) {
      if (run.owner === principal) return run;
      this.metrics.rejected.inc({ code: RouterCode.Forbidden });
      throw new HttpError(403, RouterCode.Forbidden, `program "${id}" belongs to another API key: only the key that created it may read, extend or cancel it`);
    }
    const owner = /^([a-zA-Z0-9_-]{1,63})~[0-9a-f]{12}$/.exec(id)?.[1];
    if (owner !== undefined && owner !== this.options.routerId) throw notFound(`program "${id}" runs on router ${owner}, not on ${this.options.routerId}; ask that replica`);
    throw notFound(`no program "${id}" of AgentApp ${app.namespace}/${app.name} (unknown, or finished more than ${this.options.keepMs} ms ago)`);
  }

  /** Stops the sweeper and cancels what still runs (its engine sessions end). */
  close(): void {
    clearInterval(this.sweeper);
    for (const run of this.runs.values()) run.cancel("the router is shutting down");
  }

  private sweep(): void {
    const limit = Date.now() - this.options.keepMs;
    for (const [id, run] of this.runs) {
      if (run.finishedAt !== undefined && run.finishedAt < limit) this.runs.delete(id);
      else if (run.program.open && run.lastActivity < limit) run.cancel(`open and untouched for ${this.options.keepMs} ms (--program-keep-ms)`);
    }
  }
}
