/**
 * @module A check run every `everyMs` between the controllers' own passes,
 * one at a time (a slow NATS or API server must not pile checks up), whose
 * failure is logged and left to the next tick. The zero-pool waker and the
 * pressure check run on it.
 */
import type { Logger } from "pino";

export class PeriodicCheck {
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;

  /** `everyMs` 0 or less: never runs. `failed` is logged at warn when a check throws. */
  constructor(
    private readonly everyMs: number,
    private readonly check: () => Promise<unknown>,
    private readonly log: Logger,
    private readonly failed: string,
  ) {}

  start(): void {
    if (this.timer !== null || this.everyMs <= 0) return;
    this.timer = setInterval(() => {
      this.checking ??= this.check()
        .then(() => undefined)
        .catch((err: unknown) => this.log.warn({ err }, this.failed))
        .finally(() => (this.checking = null));
    }, this.everyMs);
  }

  /** Stops the timer and waits for a check in flight. */
  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.checking;
  }
}
