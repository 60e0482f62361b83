/**
 * @module The programs a router replica runs, by id. A program lives in the
 * replica that accepted it (its values flow inside that process), so its id
 * names the replica: `<router id>~<random>`; another replica answers 404
 * saying which router to ask. Finished programs stay readable for
 * `keepMs`, then are dropped; at most `max` are held at once.
 */
import { randomBytes } from "node:crypto";
import type { AppConfig } from "../../../common/src/protocol/index.js";
import { HttpError, notFound } from "../errors.js";
import type { RouterMetrics } from "../metrics.js";
import type { ParsedProgram } from "./program-request.js";
import { ProgramRun, type ProgramDispatcher } from "./program-run.js";

export class ProgramStore {
  private readonly runs = new Map<string, ProgramRun>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly options: { routerId: string; max: number; keepMs: number; retryAfterSeconds: number },
    private readonly metrics: RouterMetrics,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(10_000, options.keepMs));
    this.sweeper.unref();
  }

  create(config: AppConfig, program: ParsedProgram, dispatcher: ProgramDispatcher): ProgramRun {
    this.sweep();
    if (this.runs.size >= this.options.max) {
      throw new HttpError(429, "capacity", `this router holds ${this.runs.size} programs (--max-programs); retry later`, { "Retry-After": String(this.options.retryAfterSeconds) });
    }
    const id = `${this.options.routerId}~${randomBytes(6).toString("hex")}`;
    const run = new ProgramRun(id, config, program, dispatcher);
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

  /** The program of an app, or a 404 that says why. */
  get(app: AppConfig, id: string): ProgramRun {
    const run = this.runs.get(id);
    if (run !== undefined && run.config.namespace === app.namespace && run.config.name === app.name) return run;
    const owner = /^([a-zA-Z0-9_-]{1,63})~[0-9a-f]{12}$/.exec(id)?.[1];
    if (owner !== undefined && owner !== this.options.routerId) throw notFound(`program "${id}" runs on router ${owner}, not on ${this.options.routerId}; ask that replica`);
    throw notFound(`no program "${id}" of AgentApp ${app.namespace}/${app.name} (unknown, or finished more than ${this.options.keepMs} ms ago)`);
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  private sweep(): void {
    const limit = Date.now() - this.options.keepMs;
    for (const [id, run] of this.runs) if (run.finishedAt !== undefined && run.finishedAt < limit) this.runs.delete(id);
  }
}
