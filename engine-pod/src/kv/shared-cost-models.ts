/**
 * @module Calibrated KV cost models shared through NATS (the
 * `interlace-cost-models` KV bucket), so the pods of an EnginePool calibrate
 * once, not at every start: a replica an autoscaler asks for adopts the
 * model its first pod measured and is ready a few seconds sooner (the
 * calibration is the largest part of a CPU engine's start). Pods do not
 * share a file system, so the key names what the costs depend on rather
 * than a file: the model's content (its size and a digest of its first and
 * last MiB; a path or modification time differs between pods that download
 * the same file), the context size, threads, GPU setting, and the hardware
 * (the GPUs' names, or the CPU's model and core count), so a pool spread
 * over two kinds of node keeps one model per kind. Keys are under the
 * engine's namespace, the only part of the bucket its NATS identity may
 * touch. Reads and writes are best effort: an unreachable bucket means a
 * calibration, never a failed start.
 */
import { createHash } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { cpus } from "node:os";
import type { KV } from "@nats-io/kv";
import { encodeToken } from "../../../common/src/protocol/index.js";
import type { CostModel } from "./cost-model.js";
import { measuredCostModelFor } from "./cost-model-cache.js";

/** What a shared cost model was measured on. */
export interface SharedCostModelKey {
  modelBytes: number;
  /** sha256 of the model's first and last MiB. */
  modelDigest: string;
  contextSize: number;
  threads: number;
  gpu: string;
  /** The GPUs' names, or the CPU's model and core count. */
  hardware: string;
}

const EDGE_BYTES = 1 << 20;

/** The key for a model file, the engine's settings and the hardware it runs on (`gpuNames`: empty on a CPU). */
export function sharedCostModelKey(modelPath: string, settings: { contextSize: number; threads: number; gpu: false | string }, gpuNames: readonly string[]): SharedCostModelKey {
  const fd = openSync(modelPath, "r");
  try {
    const size = fstatSync(fd).size;
    const hash = createHash("sha256");
    const read = (at: number, n: number): void => {
      const buf = Buffer.alloc(n);
      const got = readSync(fd, buf, 0, n, at);
      hash.update(buf.subarray(0, got));
    };
    read(0, Math.min(EDGE_BYTES, size));
    if (size > EDGE_BYTES) read(Math.max(EDGE_BYTES, size - EDGE_BYTES), Math.min(EDGE_BYTES, size - EDGE_BYTES));
    const cpu = cpus();
    const hardware = settings.gpu !== false && gpuNames.length > 0 ? `gpu:${gpuNames.join(",")}` : `cpu:${cpu[0]?.model ?? "unknown"}x${cpu.length}`;
    return { modelBytes: size, modelDigest: hash.digest("hex"), contextSize: settings.contextSize, threads: settings.threads, gpu: String(settings.gpu), hardware };
  } finally {
    closeSync(fd);
  }
}

/** The bucket key of `key` under `namespace`: one token each, the key's digest (KV keys cannot hold the key's characters). */
export function sharedCostModelEntry(namespace: string, key: SharedCostModelKey): string {
  const digest = createHash("sha256").update(JSON.stringify(key)).digest("hex").slice(0, 32);
  return `${encodeToken(namespace)}.${digest}`;
}

export class SharedCostModels {
  constructor(
    private readonly kv: KV,
    private readonly namespace: string,
  ) {}

  /** The measured model stored for `key`; undefined when there is none, it is for another key (a digest collision), or not measured. */
  async read(key: SharedCostModelKey): Promise<CostModel | undefined> {
    const entry = await this.kv.get(sharedCostModelEntry(this.namespace, key));
    if (entry === null || entry.operation !== "PUT") return undefined;
    return measuredCostModelFor(entry.string(), key);
  }

  async write(key: SharedCostModelKey, model: CostModel): Promise<void> {
    await this.kv.put(sharedCostModelEntry(this.namespace, key), JSON.stringify({ key, costModel: model }));
  }
}
