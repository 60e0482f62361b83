/**
 * @module Public surface of the engine's heartbeat (load and resident prefixes → NATS KV for the routers).
 */
export { HeartbeatPublisher, heartbeatOf, type HeartbeatOptions } from "./heartbeat-publisher.js";
export { KvEventPublisher, kvEventDiff, type KvEventOptions } from "./kv-event-publisher.js";
