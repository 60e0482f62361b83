/**
 * @module The runner's effect log: makes tool effects at most once across
 * redeliveries. Before running a call the runner *creates* its record
 * (`started`) in the `interlace-effects` KV bucket, keyed by pool and call;
 * after running it stores the result there, and only then publishes and
 * acks. So a call redelivered because its runner died
 * - after storing the result: the stored result is republished, nothing runs;
 * - after starting but before a result: an idempotent tool runs again, a
 *   non-idempotent one is answered `outcome_unknown` (it may or may not have
 *   acted; running it again could act twice).
 * `create` fails when the record exists, so two runners racing on one call
 * cannot both start it.
 */
import { createHash } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { encodeToken, type PoolRef, type ResultMessage } from "../../common/src/protocol/index.js";

export type EffectRecord = { state: "started"; runner: string; attempt: number; at: number } | { state: "done"; result: ResultMessage };

export type Begin = { fresh: true } | { fresh: false; record: EffectRecord | null };

export class EffectLog {
  constructor(
    private readonly kv: KV,
    private readonly pool: PoolRef,
  ) {}

  /** `<ns>.<pool>.<sha256 of the call's message id>`: bounded, KV-safe. */
  key(callMsgId: string): string {
    return `${encodeToken(this.pool.namespace)}.${encodeToken(this.pool.name)}.${createHash("sha256").update(callMsgId).digest("hex")}`;
  }

  /** Records the start; `fresh: false` with the existing record when someone started it before. */
  async begin(callMsgId: string, runner: string, attempt: number): Promise<Begin> {
    const key = this.key(callMsgId);
    const record: EffectRecord = { state: "started", runner, attempt, at: Date.now() };
    try {
      await this.kv.create(key, JSON.stringify(record));
      return { fresh: true };
    } catch (err) {
      const existing = await this.kv.get(key);
      // create failed but nothing is there (deleted or expired between): a real error.
      if (existing === null || existing.operation !== "PUT") throw err;
      return { fresh: false, record: parseRecord(existing.string()) };
    }
  }

  /** Stores the result (before it is published and the call acked). */
  async finish(callMsgId: string, result: ResultMessage): Promise<void> {
    const record: EffectRecord = { state: "done", result };
    await this.kv.put(this.key(callMsgId), JSON.stringify(record));
  }
}

function parseRecord(text: string): EffectRecord | null {
  try {
    const v = JSON.parse(text) as EffectRecord;
    if (v.state === "started" || (v.state === "done" && typeof v.result === "object" && v.result !== null)) return v;
  } catch {
    // fall through: an unreadable record counts as "started, outcome unknown"
  }
  return null;
}
