/**
 * @module The autoscale bench's pools as real processes: engine pods and
 * tool runners started and stopped to a wanted count, as a Deployment's
 * controller would. Scaling up spawns processes without waiting for them
 * (their model load or start-up is the cold start, timed until ready);
 * scaling down sends SIGTERM to the newest, so an engine drains its live
 * sessions and a runner hands back what it did not finish. Engines share
 * one KV cost model file, so only the first calibrates. Each pool's
 * count for the cost is every process started and not yet exited.
 */
import { spawnEngine, type EngineProcess } from "../../hack/engine-process.js";
import { spawnToolRunner, type ToolRunnerProcess } from "../../hack/stack.js";
import type { ToolRunnerConfig } from "../../common/src/protocol/index.js";
import { ReplicaTimeline } from "./replica-seconds.js";

/** One side's process, started or starting. */
interface Member {
  id: string;
  /** Resolves once ready; rejects if it failed to start. */
  ready: Promise<{ stop(): Promise<void> }>;
  stopping: boolean;
}

export interface ColdStart {
  side: "engines" | "tools";
  id: string;
  /** ms after the run's start. */
  atMs: number;
  /** Spawn to ready, ms (absent: still starting when the trace ended, or it failed to start). */
  readyMs?: number;
  error?: string;
}

/** One pool of processes of one kind. */
export class ProcessPool {
  private readonly members: Member[] = [];
  private started = 0;
  readonly timeline: ReplicaTimeline;
  readonly coldStarts: ColdStart[] = [];
  /** Processes alive (started, not exited): what the timeline records. */
  private alive = 0;

  constructor(
    readonly side: "engines" | "tools",
    private readonly spawn: (id: string) => Promise<{ stop(): Promise<void> }>,
    /** ms since the run's start (the clock the timeline and the cold starts use). */
    private readonly clock: () => number,
    private readonly prefix: string,
  ) {
    this.timeline = new ReplicaTimeline(0);
  }

  /** Processes started and not told to stop: the pool's spec.replicas. */
  get wanted(): number {
    return this.members.filter((m) => !m.stopping).length;
  }

  /**
   * Starts `n` processes and waits until all are ready (before the trace
   * starts: not cold starts). `together`: all at once (runners start
   * light); otherwise one at a time (model loads compete for the cores).
   */
  async warm(n: number, together = false): Promise<void> {
    if (together) {
      await Promise.all(Array.from({ length: n }, () => this.add(false).ready));
      return;
    }
    for (let i = 0; i < n; i++) await this.add(false).ready;
  }

  /** Starts or stops processes until `wanted` are running or starting. */
  scaleTo(wanted: number): void {
    while (this.wanted < wanted) this.add(true);
    while (this.wanted > wanted) {
      const m = [...this.members].reverse().find((x) => !x.stopping)!;
      m.stopping = true;
      void this.retire(m);
    }
  }

  /** Stops every process (SIGTERM, then the helpers' SIGKILL deadline) and waits for them to exit. */
  async stopAll(): Promise<void> {
    for (const m of this.members) m.stopping = true;
    await Promise.all([...this.members].map((m) => this.retire(m)));
  }

  private add(cold: boolean): Member {
    const id = `${this.prefix}-${this.started++}`;
    const spawnedAt = this.clock();
    this.alive++;
    this.timeline.record(Math.max(0, spawnedAt), this.alive);
    const ready = this.spawn(id);
    const m: Member = { id, ready, stopping: false };
    this.members.push(m);
    // Counted when started: one still loading when the trace ends is a cold start too (with no ready time).
    const start: ColdStart = { side: this.side, id, atMs: Math.round(spawnedAt) };
    if (cold) this.coldStarts.push(start);
    ready.then(
      () => {
        start.readyMs = Math.round(this.clock() - spawnedAt);
      },
      (err: unknown) => {
        start.error = String(err).slice(0, 300);
        this.exited(m);
      },
    );
    return m;
  }

  private async retire(m: Member): Promise<void> {
    let proc: { stop(): Promise<void> };
    try {
      proc = await m.ready;
    } catch {
      return;
    }
    await proc.stop();
    this.exited(m);
  }

  private exited(m: Member): void {
    const i = this.members.indexOf(m);
    if (i < 0) return;
    this.members.splice(i, 1);
    this.alive--;
    this.timeline.record(Math.max(0, this.clock()), this.alive);
  }
}

export interface FleetOptions {
  natsUrl: string;
  /** `namespace/name` of the EnginePool. */
  enginePool: string;
  modelPreset: string;
  sequences: number;
  contextSize: number;
  drainGraceMs: number;
  /** The engines' `--prefix-store`: sequences that keep apps' shared prefixes (what the router's warm of a new engine fills). */
  prefixStore: number;
  runnerConfig: ToolRunnerConfig;
  clock: () => number;
  /**
   * The engines' KV cost model file: the first engine (warmed before the
   * trace) calibrates and writes it, and the ones a policy starts later reuse
   * it, as the pods of one EnginePool on one kind of node would.
   */
  costModelFile: string;
}

/** The two pools of one policy's run. */
export function startFleet(o: FleetOptions): { engines: ProcessPool; runners: ProcessPool } {
  const engine = (id: string): Promise<EngineProcess> =>
    spawnEngine(
      [
        "--model-preset", o.modelPreset, "--executor", "nats", "--nats-url", o.natsUrl, "--pool", o.enginePool, "--pod-name", id,
        "--sequences", String(o.sequences), "--context-size", String(o.contextSize), "--threads", "1", "--heartbeat-ms", "250",
        "--drain-grace-ms", String(o.drainGraceMs), "--prefix-store", String(o.prefixStore), "--kv-cost-model-file", o.costModelFile,
      ],
      { env: { LOG_LEVEL: "info" }, readyTimeoutMs: 300_000 },
    );
  const runner = (id: string): Promise<ToolRunnerProcess> => spawnToolRunner(o.natsUrl, o.runnerConfig, id);
  return {
    engines: new ProcessPool("engines", engine, o.clock, "engine"),
    runners: new ProcessPool("tools", (id) => runner(id).then((r) => ({ stop: () => r.stop() })), o.clock, "runner"),
  };
}
