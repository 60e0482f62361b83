/**
 * @module A calibrated KV cost model kept in a file, so engines that load the
 * same model file with the same context size, threads and GPU setting (the
 * pods of one EnginePool on one kind of node, or a bench's engines on one
 * host) calibrate once, not at every start. Calibration is the largest part
 * of a CPU engine's start (about 3 s of 7 on the autoscale bench's host), and
 * a replica that an autoscaler asks for waits for it before it is ready. The
 * file names what it was measured on; a file for anything else, an unreadable
 * one or one written by the default model is ignored, and the engine
 * calibrates and rewrites it.
 */
import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import type { CostModel } from "./cost-model.js";

/** What a cost model was measured on: the same key, the same costs. */
export interface CostModelKey {
  /** The model file, and its size and modification time (a regenerated or replaced file is another model). */
  modelPath: string;
  modelBytes: number;
  modelMtimeMs: number;
  contextSize: number;
  threads: number;
  gpu: string;
}

/** The key for a model file and the engine settings that change its costs. */
export function costModelKey(modelPath: string, settings: { contextSize: number; threads: number; gpu: false | string }): CostModelKey {
  const st = statSync(modelPath);
  return { modelPath, modelBytes: st.size, modelMtimeMs: Math.round(st.mtimeMs), contextSize: settings.contextSize, threads: settings.threads, gpu: String(settings.gpu) };
}

function sameKey(a: unknown, b: object): boolean {
  if (a === null || typeof a !== "object") return false;
  const o = a as Record<string, unknown>;
  return Object.entries(b).every(([k, v]) => o[k] === v);
}

/**
 * The measured cost model in a stored `{key, costModel}` record (a file's
 * JSON, or a shared entry's: shared-cost-models.ts) when it was measured for
 * `key`; undefined for JSON that is not such a record, another key, or a
 * model that was not measured.
 */
export function measuredCostModelFor(json: string, key: object): CostModel | undefined {
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (data === null || typeof data !== "object") return undefined;
  const { key: stored, costModel } = data as { key?: unknown; costModel?: Partial<CostModel> };
  if (!sameKey(stored, key) || costModel === undefined || costModel === null || costModel.source !== "measured") return undefined;
  if (typeof costModel.prefillMsPerToken !== "number" || typeof costModel.decodeMsPerToken !== "number") return undefined;
  return costModel as CostModel;
}

/** The measured cost model stored in `file` for `key`; undefined when the file is missing, unreadable, for another key, or not measured. */
export function readCachedCostModel(file: string, key: CostModelKey): CostModel | undefined {
  let json: string;
  try {
    json = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  return measuredCostModelFor(json, key);
}

/** Stores a measured cost model for `key` (written whole, then renamed, so a concurrent reader never sees half a file). */
export function writeCachedCostModel(file: string, key: CostModelKey, model: CostModel): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify({ key, costModel: model }, null, 2) + "\n");
  renameSync(tmp, file);
}
