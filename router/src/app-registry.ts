/**
 * @module The AgentApps this router serves, from the `interlace-apps` KV
 * bucket the operator writes (one rendered {@link AppConfig} per app). A put
 * replaces the app's config for the next request, a delete removes it: no
 * restart. Each config is kept with its content hash, which the router's
 * presence reports so the operator can tell what is served.
 */
import type { KvWatchEntry } from "@nats-io/kv";
import { entryJson } from "./kv-watch.js";
import type { Logger } from "../../common/src/index.js";
import { appConfigHash, parseAppConfig, parseAppKey, type AppConfig } from "../../common/src/protocol/index.js";

export interface ServedApp {
  config: AppConfig;
  hash: string;
}

export class AppRegistry {
  private readonly apps = new Map<string, ServedApp>();

  constructor(
    private readonly log: Logger,
    /** Told of each entry dropped as malformed (a metric). */
    private readonly onMalformed: () => void = () => {},
  ) {}

  apply(entry: KvWatchEntry): void {
    const key = parseAppKey(entry.key);
    if (key === null) return;
    const id = `${key.namespace}/${key.name}`;
    if (entry.operation !== "PUT") {
      if (this.apps.delete(id)) this.log.info({ app: id }, "app removed");
      return;
    }
    const parsed = parseAppConfig(entryJson(entry));
    if (!parsed.ok) {
      this.log.warn({ app: id, reason: parsed.reason }, "malformed app config ignored");
      this.onMalformed();
      return;
    }
    if (parsed.value.namespace !== key.namespace || parsed.value.name !== key.name) {
      this.log.warn({ app: id }, "app config names another app; ignored");
      this.onMalformed();
      return;
    }
    this.set(parsed.value);
  }

  set(config: AppConfig): void {
    const id = `${config.namespace}/${config.name}`;
    const hash = appConfigHash(config);
    if (this.apps.get(id)?.hash !== hash) this.log.info({ app: id, hash }, "app config loaded");
    this.apps.set(id, { config, hash });
  }

  get(namespace: string, name: string): ServedApp | undefined {
    return this.apps.get(`${namespace}/${name}`);
  }

  all(): [string, ServedApp][] {
    return [...this.apps.entries()];
  }

  get size(): number {
    return this.apps.size;
  }
}
