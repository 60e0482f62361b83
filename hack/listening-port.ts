/**
 * @module The port a child process of ours (engine, router) listens on, read
 * from its pino "listening" log line on stdout. The child's output is kept
 * (its tail, for error messages) and drained for as long as it runs, so a
 * child never blocks on a full pipe.
 */
import type { ChildProcess } from "node:child_process";

export interface ChildLog {
  /** The port from the first `"listening"` line. */
  port: Promise<number>;
  /** The last 16 kB of its stdout. */
  tail(): string;
}

/** Watches `child`'s stdout; `what` names it in errors, `echo` copies its log to stderr. */
export function watchListening(child: ChildProcess, exited: Promise<void>, o: { what: string; timeoutMs: number; echo?: boolean }): ChildLog {
  let out = "";
  const port = new Promise<number>((resolvePort, reject) => {
    let found = false;
    const timer = setTimeout(() => reject(new Error(`${o.what} did not start listening: ${out.slice(-2000)}`)), o.timeoutMs);
    child.stdout!.on("data", (chunk: Buffer) => {
      out = (out + chunk.toString()).slice(-16_000);
      if (o.echo === true) process.stderr.write(chunk);
      if (found) return;
      for (const line of out.split("\n")) {
        if (!line.includes('"listening')) continue;
        try {
          const p = (JSON.parse(line) as { port?: number }).port;
          if (typeof p === "number") {
            found = true;
            clearTimeout(timer);
            resolvePort(p);
            return;
          }
        } catch {
          // a partial line; wait for the rest
        }
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${o.what} exited before listening: ${out.slice(-2000)}`));
    });
  });
  // A rejection nobody awaits yet (the child exits after listening) is not an unhandled one.
  port.catch(() => undefined);
  return { port, tail: () => out };
}
