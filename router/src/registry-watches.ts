/**
 * @module The two views every front door (the router, the endpoint picker)
 * places from: the AgentApp configs (`interlace-apps`) and the engine
 * heartbeats (`interlace-engines`), each watched into its registry for as
 * long as the process runs. Resolves once both buckets' current values are
 * applied, so a front door never places from an empty view.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../common/src/index.js";
import { openAppsBucket, openEnginesBucket } from "../../common/src/protocol/index.js";
import type { AppRegistry } from "./app-registry.js";
import type { EngineRegistry } from "./engine-registry.js";
import { KvWatch } from "./kv-watch.js";

/** Starts both watches (pushed onto `watches` at once, so a failed start can still stop them) and the engines' staleness sweep. */
export async function watchAppsAndEngines(nc: NatsConnection, registries: { apps: AppRegistry; engines: EngineRegistry }, watches: KvWatch[], log: Logger): Promise<void> {
  const [appsKv, enginesKv] = await Promise.all([openAppsBucket(nc), openEnginesBucket(nc)]);
  const appWatch = new KvWatch(appsKv, (e) => registries.apps.apply(e), log);
  const engineWatch = new KvWatch(enginesKv, (e) => registries.engines.apply(e), log);
  watches.push(appWatch, engineWatch);
  await Promise.all([appWatch.start(), engineWatch.start()]);
  await Promise.all([appWatch.loaded, engineWatch.loaded]);
  registries.engines.startSweeping();
}
