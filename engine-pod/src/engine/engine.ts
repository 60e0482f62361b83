/**
 * @module The `Engine` implementation (work in progress: the factory's
 * signature is final, the body lands next).
 */
import type { Logger } from "../../../common/src/index.js";
import type { Executor } from "../executor/executor.js";
import type { Engine } from "./engine-api.js";
import type { EngineOptions } from "./engine-options.js";

/** Loads the model, creates the context and starts the decode loop. */
export async function createEngine(options: EngineOptions, executor: Executor, log: Logger): Promise<Engine> {
  void options;
  void executor;
  void log;
  throw new Error("createEngine: not implemented yet");
}
