/**
 * @module No R1 state in a replicated deployment: every Interlace stream and
 * KV bucket is created at `INTERLACE_NATS_REPLICAS` (streams.ts), but one
 * made before that (an older release, a cluster that grew from one node)
 * keeps its replica count, and JetStream never raises it by itself. The
 * operator runs {@link upgradeReplicas} at start: each Interlace stream with
 * fewer replicas than configured is updated in place (JetStream copies the
 * data to the new peers; nothing is lost), and one the cluster cannot hold
 * at that count is reported, never silently left.
 *
 * It also removes the single interrupt stream of releases before namespaced
 * interrupt subjects: its `interlace.intr.>` would overlap every namespace's
 * stream, so none could be created.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from "@nats-io/jetstream";
import { LEGACY_INTR_STREAM } from "./subjects.js";

/** Streams that belong to Interlace: its own and its KV buckets'. */
export function isInterlaceStream(name: string): boolean {
  return name.startsWith("INTERLACE_") || name.startsWith("KV_interlace-");
}

export interface ReplicaReport {
  /** Streams raised to the configured count. */
  upgraded: { stream: string; from: number }[];
  /** Streams still below it, with why the update was refused. */
  short: { stream: string; replicas: number; error: string }[];
}

/** Raises every Interlace stream below `replicas` to it; reports what could not be raised. */
export async function upgradeReplicas(jsm: JetStreamManager, replicas: number): Promise<ReplicaReport> {
  const report: ReplicaReport = { upgraded: [], short: [] };
  for await (const info of jsm.streams.list()) {
    const { config } = info;
    const current = config.num_replicas ?? 1;
    if (!isInterlaceStream(config.name) || current >= replicas) continue;
    try {
      await jsm.streams.update(config.name, { ...config, num_replicas: replicas });
      report.upgraded.push({ stream: config.name, from: current });
    } catch (err) {
      report.short.push({ stream: config.name, replicas: current, error: err instanceof Error ? err.message : String(err) });
    }
  }
  return report;
}

/** Deletes the pre-namespace `INTERLACE_INTR` stream; true when there was one. */
export async function removeLegacyIntrStream(jsm: JetStreamManager): Promise<boolean> {
  try {
    return await jsm.streams.delete(LEGACY_INTR_STREAM);
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return false;
    throw err;
  }
}
