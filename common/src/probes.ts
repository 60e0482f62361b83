/**
 * @module The observability surface every Interlace process serves:
 * `/healthz` (process alive), `/readyz` (ready for work) and `/metrics`
 * (Prometheus text from a prom-client registry). Mounted on the component's
 * own express app, or served alone by components without an HTTP API.
 */
import express, { type Express } from "express";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

export interface ProbeOptions {
  registry: Registry;
  /** Returns null when ready, or the reason it is not. */
  notReadyReason: () => string | null;
}

export function mountProbes(app: Express, options: ProbeOptions): void {
  app.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  app.get("/readyz", (_req, res) => {
    const reason = options.notReadyReason();
    if (reason === null) res.json({ status: "ready" });
    else res.status(503).json({ status: "not_ready", reason });
  });
  app.get("/metrics", async (_req, res) => {
    res.type(options.registry.contentType).send(await options.registry.metrics());
  });
}

/** Listens and resolves with the bound port (pass port 0 for a free one). */
export function listen(app: Express, port: number, host = "0.0.0.0"): Promise<{ server: Server; port: number }> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host, (err?: Error) => {
      if (err) reject(err);
      else resolve({ server, port: (server.address() as AddressInfo).port });
    });
  });
}

/** A standalone probe server, for processes whose main work is not HTTP. */
export async function serveProbes(port: number, options: ProbeOptions, host?: string): Promise<{ server: Server; port: number }> {
  const app = express();
  mountProbes(app, options);
  return listen(app, port, host);
}
