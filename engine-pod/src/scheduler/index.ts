/**
 * @module The scheduler's public surface: which sequence a request runs on
 * (slot allocation, idle prefix cache).
 */
export { SlotAllocator, commonPrefix, type SlotGrant, type SlotState } from "./slot-allocator.js";
