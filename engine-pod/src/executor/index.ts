/**
 * @module The executor folder's public surface: the {@link Executor} contract
 * and its in-process implementation. The NATS executor is loaded dynamically
 * by `main.ts` (it pulls in the NATS client only when selected).
 */
export type { Executor, ToolCall, ToolResult } from "./executor.js";
export { InProcessExecutor, type InProcessExecutorOptions } from "./in-process-executor.js";
