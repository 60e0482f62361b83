/**
 * @module Graceful shutdown: on SIGTERM/SIGINT run the registered closers in
 * reverse order of registration (last started, first stopped), once, with a
 * deadline after which the process exits anyway.
 */
import type { Logger } from "pino";

export type Closer = () => Promise<void> | void;

export class Shutdown {
  private readonly closers: { name: string; close: Closer }[] = [];
  private running: Promise<void> | null = null;

  constructor(
    private readonly log: Logger,
    private readonly deadlineMs = 10_000,
  ) {}

  add(name: string, close: Closer): void {
    this.closers.push({ name, close });
  }

  /** Installs signal handlers that call {@link run} then exit. */
  installSignalHandlers(): void {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => {
        this.log.info({ signal }, "shutting down");
        void this.run().then(() => process.exit(0));
      });
    }
  }

  run(): Promise<void> {
    this.running ??= this.closeAll();
    return this.running;
  }

  private async closeAll(): Promise<void> {
    const timer = setTimeout(() => {
      this.log.error({ deadlineMs: this.deadlineMs }, "shutdown deadline passed; exiting");
      process.exit(1);
    }, this.deadlineMs);
    timer.unref();
    for (const { name, close } of [...this.closers].reverse()) {
      try {
        await close();
      } catch (err) {
        this.log.warn({ err, closer: name }, "closer failed during shutdown");
      }
    }
    clearTimeout(timer);
  }
}
