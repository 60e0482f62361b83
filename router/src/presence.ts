/**
 * @module The router's presence in `interlace-routers`: every few seconds,
 * which app configs it serves (by content hash) and how many sessions it has
 * open per app. The operator reads it for the AgentApp's Ready condition
 * (a router serves the app's current config) and `status.activeSessions`
 * (summed over routers); and the requests it holds per EnginePool with no
 * ready engine, which the autoscaler reads to wake a pool at zero. Deleted on
 * shutdown; a killed router's value expires.
 */
import type { KV } from "@nats-io/kv";
import type { Logger } from "../../common/src/index.js";
import { encodeToken, type RouterPresence } from "../../common/src/protocol/index.js";
import type { AppRegistry } from "./app-registry.js";

export class PresencePublisher {
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly kv: KV,
    private readonly routerId: string,
    private readonly apps: AppRegistry,
    private readonly live: ReadonlyMap<string, number>,
    private readonly log: Logger,
    /** Requests held now per EnginePool (`namespace/name`): the cold-start hold's and the capacity queue's. */
    private readonly held: () => ReadonlyMap<string, number> = () => new Map(),
  ) {}

  value(): RouterPresence {
    const apps: RouterPresence["apps"] = {};
    for (const [id, served] of this.apps.all()) apps[id] = { hash: served.hash, activeSessions: this.live.get(id) ?? 0 };
    const held = Object.fromEntries([...this.held()].filter(([, n]) => n > 0));
    return { router: this.routerId, at: Date.now(), apps, ...(Object.keys(held).length > 0 ? { held } : {}) };
  }

  start(intervalMs: number): void {
    void this.publish();
    this.timer = setInterval(() => void this.publish(), intervalMs);
    this.timer.unref();
  }

  async publish(): Promise<void> {
    if (this.closed) return;
    try {
      await this.kv.put(encodeToken(this.routerId), JSON.stringify(this.value()));
    } catch (err) {
      if (!this.closed) this.log.warn({ err }, "presence not published");
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.kv.delete(encodeToken(this.routerId)).catch(() => undefined);
  }
}
