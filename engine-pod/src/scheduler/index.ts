/**
 * @module The scheduler's public surface: the per-step plan (plain data),
 * admission and slot lending over the slot allocator (prefix cache), and
 * the prefix store that keeps apps' shared prefixes beyond the session slots.
 */
export {
  Scheduler,
  type Admission,
  type BatchItem,
  type ReuseInputs,
  type SchedulerOptions,
  type StepPlan,
} from "./scheduler.js";
export type { SessionView } from "./session-view.js";
export { PREFIX_STORE_MIN_TOKENS, PrefixStore, type OfferedPrefix, type StoredPrefix } from "./prefix-store.js";
export { SlotAllocator, commonPrefix, type Retention, type SlotGrant, type SlotState } from "./slot-allocator.js";
