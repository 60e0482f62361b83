/**
 * @module What the operator checks on the bus at start (stream-replicas.ts):
 * every Interlace stream and KV bucket at the configured replica count (an
 * existing R1 one is upgraded; one that cannot be is reported as a warning
 * with the reason), and the pre-namespace interrupt stream removed. Runs
 * beside the reconcilers, not before them: NATS may come up after the
 * operator, so a failed run is logged and retried, never fatal.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { jetstreamManager } from "@nats-io/jetstream";
import type { Logger } from "pino";
import { removeLegacyIntrStream, upgradeReplicas, type ReplicaReport } from "../../../common/src/protocol/index.js";
import { connectNats, type NatsSecurity } from "../../../common/src/security/nats-connect.js";

export interface StreamUpkeepOptions {
  natsUrl: string;
  replicas: number;
  /** The operator's NATS identity and CA, read at connect time. */
  security: () => NatsSecurity;
  log: Logger;
  /** Wait between failed runs (default 10 s). */
  retryMs?: number;
  /** Stops retrying. */
  signal?: AbortSignal;
}

/** One pass; resolves with what it did (also logged). */
export async function runStreamUpkeep(opts: Omit<StreamUpkeepOptions, "retryMs" | "signal">): Promise<ReplicaReport & { legacyRemoved: boolean }> {
  const nc = await connectNats({ servers: opts.natsUrl, name: "interlace-operator-upkeep", security: opts.security() });
  try {
    const jsm = await jetstreamManager(nc);
    const legacyRemoved = await removeLegacyIntrStream(jsm);
    if (legacyRemoved) opts.log.warn("removed the pre-namespace INTERLACE_INTR stream (its subjects overlap every namespace's interrupt stream)");
    const report = await upgradeReplicas(jsm, opts.replicas);
    for (const u of report.upgraded) opts.log.info({ stream: u.stream, from: u.from, to: opts.replicas }, "raised a stream to the configured replica count");
    for (const s of report.short) opts.log.warn({ stream: s.stream, replicas: s.replicas, wanted: opts.replicas, error: s.error }, "a stream is below the configured replica count and could not be raised: losing its node loses it");
    return { ...report, legacyRemoved };
  } finally {
    await nc.close();
  }
}

/** Runs {@link runStreamUpkeep} until one pass gets through (or `signal` aborts). */
export async function keepStreamsReplicated(opts: StreamUpkeepOptions): Promise<void> {
  while (opts.signal?.aborted !== true) {
    try {
      await runStreamUpkeep(opts);
      return;
    } catch (err) {
      opts.log.warn({ err }, "stream upkeep failed; retrying");
      await sleep(opts.retryMs ?? 10_000, undefined, opts.signal !== undefined ? { signal: opts.signal } : {}).catch(() => undefined);
    }
  }
}
