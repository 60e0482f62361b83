/**
 * @module Test helper: a real nats-server (JetStream, loopback, free port,
 * temporary store) that is stopped when the test ends.
 */
import { NatsServer, type NatsServerOptions } from "../../hack/nats.js";

export { NatsServer };

interface Teardownable {
  teardown(fn: () => unknown): void;
}

/** Starts a nats-server for test `t` and stops it on `t.teardown`. */
export async function startNatsServer(t: Teardownable, options: NatsServerOptions = {}): Promise<NatsServer> {
  const server = await NatsServer.start(options);
  t.teardown(() => server.stop());
  return server;
}
