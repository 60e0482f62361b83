/**
 * @module Generated models on demand: writes a preset's GGUF into the
 * git-ignored model cache (`$INTERLACE_CACHE/models`, default
 * `<repo>/.cache/models`) once, atomically (temp file + rename, so parallel
 * test processes never see a half-written file), and reuses it afterwards.
 */
import { createHash, randomUUID } from "node:crypto";
import { createReadStream, existsSync } from "node:fs";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { writeGguf } from "./gguf-writer.js";
import { buildLlamaGguf, GENERATOR_VERSION } from "./llama-model.js";
import { isPresetName, PRESETS, type ModelPreset, type PresetName } from "./presets.js";

/** What to generate. */
export interface ModelRequest {
  /** A preset name, or a full preset for one-off shapes. */
  readonly preset: PresetName | ModelPreset;
  /** uint32 weight seed; default 1. */
  readonly seed?: number;
}

export interface EnsureModelOptions {
  /** Where models are cached; default {@link defaultModelCacheDir}. */
  readonly cacheDir?: string;
}

/** The repository root: the nearest ancestor of this module holding a package.json. */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "package.json"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
}

/** `$INTERLACE_CACHE/models`, or `<repo>/.cache/models` (the same cache hack/lib.sh uses). */
export function defaultModelCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env["INTERLACE_CACHE"];
  return resolve(cache !== undefined && cache !== "" ? cache : join(repoRoot(), ".cache"), "models");
}

function resolvePreset(preset: PresetName | ModelPreset): ModelPreset {
  if (typeof preset !== "string") return preset;
  if (!isPresetName(preset)) throw new Error(`unknown model preset "${String(preset)}"`);
  return PRESETS[preset];
}

function checkSeed(seed: number): number {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error(`seed must be a uint32, got ${seed}`);
  return seed;
}

/**
 * The cache file name: preset, seed, generator version and a hash of the
 * preset's shape, so a changed preset never reuses a stale file.
 */
export function modelFileName(request: ModelRequest): string {
  const preset = resolvePreset(request.preset);
  const seed = checkSeed(request.seed ?? 1);
  const shape = createHash("sha256").update(JSON.stringify({ v: GENERATOR_VERSION, preset })).digest("hex").slice(0, 8);
  return `interlace-${preset.name}-seed${seed}-g${GENERATOR_VERSION}-${shape}.gguf`;
}

/** Writes the model to `path` (atomically: a temp file beside it, then rename). */
export async function generateModel(request: ModelRequest, path: string): Promise<void> {
  const preset = resolvePreset(request.preset);
  const seed = checkSeed(request.seed ?? 1);
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${randomUUID()}.tmp`;
  try {
    await writeGguf(tmp, buildLlamaGguf(preset, seed));
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

const inFlight = new Map<string, Promise<string>>();

/** Returns the path of the cached model, generating it first if it is not there yet. */
export async function ensureModel(request: ModelRequest, options: EnsureModelOptions = {}): Promise<string> {
  const path = join(options.cacheDir ?? defaultModelCacheDir(), modelFileName(request));
  const existing = await stat(path).catch(() => undefined);
  if (existing?.isFile()) return path;
  let pending = inFlight.get(path);
  if (pending === undefined) {
    pending = generateModel(request, path)
      .then(() => path)
      .finally(() => inFlight.delete(path));
    inFlight.set(path, pending);
  }
  return pending;
}

/** Hex sha256 of a file's bytes. */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}
