/**
 * @module The Interlace NATS protocol version. Every call, result and
 * interrupt carries it (header and body); a receiver answers a message of
 * another version with a clear error instead of guessing at its shape.
 */

/** Bumped on any incompatible change to subjects, headers or message schemas. */
export const PROTOCOL_VERSION = 2; // 2: interrupt subjects carry the namespace (interlace.intr.<ns>.<pod>.<session>)
