/**
 * @module `npm run gen-model -- --preset bench --seed 1 [--out FILE]`: writes a
 * generated model (into the model cache unless --out is given) and prints its
 * path, size and sha256.
 */
import { stat } from "node:fs/promises";
import { resolve } from "node:path";
import { parseArgv } from "../common/src/index.js";
import { ensureModel, generateModel, isPresetName, PRESET_NAMES, sha256File } from "../engine-pod/src/model/index.js";

async function main(): Promise<number> {
  const flags = parseArgv(process.argv.slice(2));
  const preset = flags.get("preset") ?? "test";
  if (!isPresetName(preset)) {
    process.stderr.write(`unknown --preset "${preset}" (expected ${PRESET_NAMES.join("|")})\n`);
    return 2;
  }
  const seed = Number(flags.get("seed") ?? "1");
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
    process.stderr.write(`--seed must be a uint32\n`);
    return 2;
  }
  const started = performance.now();
  const out = flags.get("out");
  let path: string;
  if (out !== undefined) {
    path = resolve(out);
    await generateModel({ preset, seed }, path);
  } else {
    path = await ensureModel({ preset, seed });
  }
  const { size } = await stat(path);
  const sha256 = await sha256File(path);
  process.stdout.write(`path: ${path}\nsize: ${size}\nsha256: ${sha256}\nms: ${Math.round(performance.now() - started)}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`gen-model: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  },
);
