/**
 * @module The router's entrypoint (`npm run router -- --nats-url nats://...`):
 * parse the options, start serving, and on SIGTERM/SIGINT stop accepting,
 * let streams end, withdraw the presence and drain NATS.
 */
import { pathToFileURL } from "node:url";
import { createLogger, InterlaceError, Shutdown } from "../../common/src/index.js";
import { parseRouterOptions, type RouterOptions } from "./config.js";
import { startRouter } from "./router-server.js";

async function main(): Promise<void> {
  let options: RouterOptions;
  try {
    options = parseRouterOptions();
  } catch (err) {
    process.stderr.write(`router: ${err instanceof InterlaceError ? err.message : String(err)}\n`);
    process.exit(2);
  }
  const log = createLogger("router", options.logLevel);
  const shutdown = new Shutdown(log, 15_000);
  shutdown.installSignalHandlers();
  try {
    const router = await startRouter(options, log);
    shutdown.add("router", () => router.close());
    log.info({ port: router.port }, "listening");
  } catch (err) {
    log.fatal({ err }, "router failed to start");
    await shutdown.run();
    process.exit(1);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}
