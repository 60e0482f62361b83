/**
 * @module Names of the JetStream objects that make tool effects at most once
 * and failures durable:
 *
 * - KV bucket `interlace-effects`, key `<namespace>.<pool>.<call>` (tokens
 *   encoded): the runner writes `started` before it runs a call and the result
 *   after, both before acking, so a redelivered call is answered from the
 *   record instead of acting twice.
 * - Stream `INTERLACE_MAXDELIVER` captures JetStream's MAX_DELIVERIES
 *   advisories of every pool's `runners` consumer, so an executor that was
 *   disconnected when a call ran out of deliveries still learns it.
 */
export const EFFECTS_BUCKET = "interlace-effects";
export const MAXDELIVER_STREAM = "INTERLACE_MAXDELIVER";
