/**
 * @module The contract the executors here implement. It is declared by the
 * engine that uses it (`engine/executor.ts`); this file only names it for the
 * implementations beside it.
 */
export type { Executor, ToolCall, ToolResult } from "../engine/executor.js";
