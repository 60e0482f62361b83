/**
 * @module Generated models are byte-for-byte deterministic: same preset and
 * seed give the same file, a different seed a different one, and the `test`
 * preset's hash is pinned so an accidental change to the generator is caught
 * (bump GENERATOR_VERSION and the pin together when changing it on purpose).
 */
import t from "tap";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  encodeGgufHeader,
  buildLlamaGguf,
  ensureModel,
  generateModel,
  ggufFileSize,
  GENERATOR_VERSION,
  PRESETS,
  sha256File,
} from "../../engine-pod/src/model/index.js";

/** sha256 of `interlace-test-seed1` (generator version 1). */
const TEST_PRESET_SEED1_SHA256 = "70d930420bd145c54d9c5505dce18ca9c3879564ad947b17093b2fbc73bdc56c";

const dir = await mkdtemp(join(tmpdir(), "interlace-model-"));
t.teardown(() => rm(dir, { recursive: true, force: true }));

t.test("same preset and seed give identical bytes; the test preset hash is pinned", async (t) => {
  const a = join(dir, "a.gguf");
  const b = join(dir, "b.gguf");
  await generateModel({ preset: "test", seed: 1 }, a);
  await generateModel({ preset: "test", seed: 1 }, b);
  const [ha, hb] = await Promise.all([sha256File(a), sha256File(b)]);
  t.equal(ha, hb, "two generations are identical");
  t.equal(GENERATOR_VERSION, 1, "pin below belongs to generator version 1");
  t.equal(ha, TEST_PRESET_SEED1_SHA256, "pinned sha256 of the test preset, seed 1");
  t.equal((await stat(a)).size, ggufFileSize(buildLlamaGguf(PRESETS.test, 1)), "size matches the layout");
});

t.test("a different seed changes the weights but not the header", async (t) => {
  const a = join(dir, "s1.gguf");
  const b = join(dir, "s2.gguf");
  await generateModel({ preset: "test", seed: 1 }, a);
  await generateModel({ preset: "test", seed: 2 }, b);
  t.not(await sha256File(a), await sha256File(b));
  const headerA = encodeGgufHeader(buildLlamaGguf(PRESETS.test, 1));
  const headerB = encodeGgufHeader(buildLlamaGguf(PRESETS.test, 2));
  // general.name carries the seed; the header length (and so every tensor offset) is the same.
  t.equal(headerA.length, headerB.length);
});

t.test("the header is well-formed GGUF v3 with 32-byte-aligned data", async (t) => {
  const path = join(dir, "h.gguf");
  await generateModel({ preset: "test", seed: 7 }, path);
  const bytes = await readFile(path);
  t.equal(bytes.subarray(0, 4).toString("ascii"), "GGUF");
  t.equal(bytes.readUInt32LE(4), 3, "version 3");
  const spec = buildLlamaGguf(PRESETS.test, 7);
  t.equal(bytes.readBigUInt64LE(8), BigInt(spec.tensors.length), "tensor count");
  t.equal(bytes.readBigUInt64LE(16), BigInt(spec.metadata.length), "kv count");
  t.equal(encodeGgufHeader(spec).length % 32, 0, "data section aligned");
  t.equal(bytes.length % 32, 0, "every tensor padded to the alignment");
  t.equal(spec.tensors.length, 2 + 9 * PRESETS.test.nLayer + 1, "token_embd, 9 per block, output_norm, output");
});

t.test("ensureModel writes once into the cache and reuses the file", async (t) => {
  const cacheDir = join(dir, "cache");
  const [p1, p2] = await Promise.all([
    ensureModel({ preset: "test", seed: 3 }, { cacheDir }),
    ensureModel({ preset: "test", seed: 3 }, { cacheDir }),
  ]);
  t.equal(p1, p2);
  const before = await stat(p1);
  const p3 = await ensureModel({ preset: "test", seed: 3 }, { cacheDir });
  t.equal(p3, p1);
  t.equal((await stat(p3)).mtimeMs, before.mtimeMs, "cached file not rewritten");
  t.not(await ensureModel({ preset: "test", seed: 4 }, { cacheDir }), p1, "another seed, another file");
  await t.rejects(ensureModel({ preset: "nope" as "test" }, { cacheDir }), /unknown model preset/);
  await t.rejects(ensureModel({ preset: "test", seed: -1 }, { cacheDir }), /uint32/);
});
