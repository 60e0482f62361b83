/**
 * @module Loopback ports for the processes the project's scripts and tests
 * start. A port found free can be taken by another process (a parallel
 * test) before the child binds it, so a start that picks its ports is run
 * again on fresh ones when that happens.
 */
import { createServer } from "node:net";

/** A free TCP port on 127.0.0.1 (the OS picks it; there is a small race until it is bound again). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      srv.close(() => resolvePort(port));
    });
  });
}

/** Runs `start` (which picks its own ports and cleans up after itself when it fails) up to `attempts` times while it fails because a port it picked was taken. */
export async function retryOnPortTaken<T>(start: () => Promise<T>, attempts: number): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts || !/address already in use/i.test(err instanceof Error ? err.message : String(err))) throw err;
    }
  }
}
