/**
 * @module The endpoint picker's entrypoint (`npm run picker -- --nats-url
 * nats://... --pool ns/name`): parse the options, serve, and on
 * SIGTERM/SIGINT drain (NOT_SERVING, then open streams finish) and stop.
 */
import { pathToFileURL } from "node:url";
import { createLogger, InterlaceError, Shutdown } from "../../../common/src/index.js";
import { parsePickerOptions, type PickerOptions } from "./config.js";
import { startPicker } from "./picker-server.js";

async function main(): Promise<void> {
  let options: PickerOptions;
  try {
    options = parsePickerOptions();
  } catch (err) {
    process.stderr.write(`picker: ${err instanceof InterlaceError ? err.message : String(err)}\n`);
    process.exit(2);
  }
  const log = createLogger("picker", options.logLevel);
  const shutdown = new Shutdown(log, options.drainMs + options.shutdownGraceMs + 10_000);
  shutdown.installSignalHandlers();
  try {
    const picker = await startPicker(options, log);
    shutdown.add("picker", () => picker.close());
    log.info({ grpcPort: picker.grpcPort, port: picker.port }, "listening");
  } catch (err) {
    log.fatal({ err }, "picker failed to start");
    await shutdown.run();
    process.exit(1);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}
