/**
 * @module The GGUF writer against an independent reader (node-llama-cpp's
 * readGgufFileInfo): every metadata value type round-trips, tensor infos have
 * the declared shapes, types and aligned offsets; F16 conversion matches
 * IEEE half precision; an F16 model loads and decodes in llama.cpp.
 */
import t from "tap";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { getLlama, LlamaLogLevel, readGgufFileInfo, type Token } from "node-llama-cpp";
import { ensureModel, f32ToF16Bits, gguf, PRESETS, writeGguf } from "../../engine-pod/src/model/index.js";

const dir = await mkdtemp(join(tmpdir(), "interlace-gguf-"));
t.teardown(() => rm(dir, { recursive: true, force: true }));

t.test("every metadata value type and tensor info round-trips", async (t) => {
  const path = join(dir, "types.gguf");
  await writeGguf(path, {
    metadata: [
      ["general.architecture", gguf.str("llama")],
      ["t.u8", gguf.u8(250)],
      ["t.i8", gguf.i8(-120)],
      ["t.u16", gguf.u16(65000)],
      ["t.i16", gguf.i16(-32000)],
      ["t.u32", gguf.u32(4_000_000_000)],
      ["t.i32", gguf.i32(-2_000_000_000)],
      ["t.f32", gguf.f32(0.5)],
      ["t.f64", gguf.f64(1 / 3)],
      ["t.u64", gguf.u64(2n ** 40n)],
      ["t.i64", gguf.i64(-(2n ** 40n))],
      ["t.bool", gguf.bool(true)],
      ["t.str", gguf.str("héllo ▁ [CALL]")],
      ["t.strs", gguf.strings(["a", "", "日本"])],
      ["t.f32s", gguf.f32s([1.5, -2.25])],
      ["t.i32s", gguf.i32s([-1, 2, 3])],
      ["t.u32s", gguf.u32s([])],
    ],
    tensors: [
      { name: "a", dims: [3], type: "f32", data: () => Float32Array.from([1, 2, 3]) },
      { name: "b", dims: [4, 2], type: "f16", data: () => Float32Array.from([0, 1, -1, 0.5, 2, 4, 8, 65504]) },
      { name: "c", dims: [5], type: "f32", data: () => new Float32Array(5).fill(7) },
    ],
  });
  const info = await readGgufFileInfo(path, { logWarnings: false });
  t.equal(info.version, 3);
  const m = (info.metadata as unknown as { t: Record<string, unknown> }).t;
  t.equal(m["u8"], 250);
  t.equal(m["i8"], -120);
  t.equal(m["u16"], 65000);
  t.equal(m["i16"], -32000);
  t.equal(m["u32"], 4_000_000_000);
  t.equal(m["i32"], -2_000_000_000);
  t.equal(m["f32"], 0.5);
  t.equal(m["f64"], 1 / 3);
  t.equal(BigInt(m["u64"] as number | bigint), 2n ** 40n);
  t.equal(BigInt(m["i64"] as number | bigint), -(2n ** 40n));
  t.equal(m["bool"], true);
  t.equal(m["str"], "héllo ▁ [CALL]");
  t.same(m["strs"], ["a", "", "日本"]);
  t.same(m["f32s"], [1.5, -2.25]);
  t.same(m["i32s"], [-1, 2, 3]);
  t.same(m["u32s"], []);

  const tensors = info.fullTensorInfo ?? [];
  t.same(tensors.map((x) => x.name), ["a", "b", "c"]);
  t.same(tensors.map((x) => x.dimensions.map(Number)), [[3], [4, 2], [5]]);
  t.same(tensors.map((x) => x.ggmlType), [0, 1, 0]);
  t.same(tensors.map((x) => Number(x.offset)), [0, 32, 64], "offsets padded to 32 bytes");

  // The tensor bytes sit where the infos say they do.
  const bytes = await readFile(path);
  const data = bytes.length - 96;
  t.equal(data % 32, 0, "data section starts aligned");
  t.same([bytes.readFloatLE(data), bytes.readFloatLE(data + 8)], [1, 3]);
  t.equal(bytes.readUInt16LE(data + 32 + 2), 0x3c00, "f16 1.0");
  t.equal(bytes.readUInt16LE(data + 32 + 14), 0x7bff, "f16 65504");
  t.equal(bytes.readFloatLE(data + 64 + 16), 7);
});

t.test("f32 to f16 rounds like IEEE binary16", async (t) => {
  const cases: Array<[number, number]> = [
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [0.1, 0x2e66],
    [65504, 0x7bff],
    [65520, 0x7c00], // rounds up to infinity
    [1e6, 0x7c00],
    [-Infinity, 0xfc00],
    [2 ** -24, 0x0001], // smallest subnormal
    [2 ** -26, 0x0000], // below half the smallest subnormal
    [6.1e-5, 0x03ff], // largest subnormal region
    [1 + 2 ** -11, 0x3c00], // tie rounds to even
    [1 + 3 * 2 ** -11, 0x3c02],
  ];
  for (const [value, bits] of cases) t.equal(f32ToF16Bits(value), bits, `${value}`);
  t.equal(f32ToF16Bits(NaN) & 0x7c00, 0x7c00);
  t.not(f32ToF16Bits(NaN) & 0x03ff, 0, "NaN stays NaN");
});

t.test("an F16 model loads and decodes", async (t) => {
  const llama = await getLlama({ gpu: false, build: "never", logLevel: LlamaLogLevel.error });
  const modelPath = await ensureModel({ preset: { ...PRESETS.test, name: "test-f16", tensorType: "f16" } });
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ contextSize: 256, threads: 1 });
  t.teardown(async () => {
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  });
  const info = await readGgufFileInfo(modelPath, { logWarnings: false });
  t.equal((info.metadata as unknown as { general: { file_type: number } }).general.file_type, 1, "mostly F16");
  const sequence = context.getSequence();
  const out: Token[] = [];
  for await (const token of sequence.evaluate(model.tokenize("hello world", false), { temperature: 0 })) {
    out.push(token);
    if (out.length >= 8) break;
  }
  t.equal(out.length, 8);
});
