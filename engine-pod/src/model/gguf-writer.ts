/**
 * @module GGUF v3 writer: header, metadata key/values (every scalar type and
 * arrays), tensor infos and 32-byte-aligned tensor data (F32, F16). Tensor
 * data is produced lazily, one tensor at a time, so a 100 MB model never sits
 * in memory twice. Pure format code: knows nothing about LLaMA.
 */
import { open } from "node:fs/promises";
import { endianness } from "node:os";

/** GGUF metadata value type ids (gguf.md, `gguf_metadata_value_type`). */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;

/** ggml tensor types this writer can emit. */
export const GgmlType = { F32: 0, F16: 1 } as const;
export type TensorType = "f32" | "f16";

/** Default and only alignment used here (`general.alignment`). */
export const GGUF_ALIGNMENT = 32;

type NumberKind = "u8" | "i8" | "u16" | "i16" | "u32" | "i32" | "f32" | "f64";
type BigKind = "u64" | "i64";

/** One metadata value. Build them with the {@link gguf} helpers. */
export type GgufValue =
  | { readonly kind: NumberKind; readonly value: number }
  | { readonly kind: BigKind; readonly value: bigint }
  | { readonly kind: "bool"; readonly value: boolean }
  | { readonly kind: "string"; readonly value: string }
  | { readonly kind: "array"; readonly of: NumberKind; readonly values: ArrayLike<number> }
  | { readonly kind: "array"; readonly of: BigKind; readonly values: readonly bigint[] }
  | { readonly kind: "array"; readonly of: "bool"; readonly values: readonly boolean[] }
  | { readonly kind: "array"; readonly of: "string"; readonly values: readonly string[] };

/** Constructors for metadata values, so call sites read like the spec. */
export const gguf = {
  u8: (value: number): GgufValue => ({ kind: "u8", value }),
  i8: (value: number): GgufValue => ({ kind: "i8", value }),
  u16: (value: number): GgufValue => ({ kind: "u16", value }),
  i16: (value: number): GgufValue => ({ kind: "i16", value }),
  u32: (value: number): GgufValue => ({ kind: "u32", value }),
  i32: (value: number): GgufValue => ({ kind: "i32", value }),
  f32: (value: number): GgufValue => ({ kind: "f32", value }),
  f64: (value: number): GgufValue => ({ kind: "f64", value }),
  u64: (value: bigint): GgufValue => ({ kind: "u64", value }),
  i64: (value: bigint): GgufValue => ({ kind: "i64", value }),
  bool: (value: boolean): GgufValue => ({ kind: "bool", value }),
  str: (value: string): GgufValue => ({ kind: "string", value }),
  strings: (values: readonly string[]): GgufValue => ({ kind: "array", of: "string", values }),
  f32s: (values: ArrayLike<number>): GgufValue => ({ kind: "array", of: "f32", values }),
  i32s: (values: ArrayLike<number>): GgufValue => ({ kind: "array", of: "i32", values }),
  u32s: (values: ArrayLike<number>): GgufValue => ({ kind: "array", of: "u32", values }),
};

/** A tensor to write. `dims` are ggml order: `dims[0]` (ne0) is the innermost, contiguous row length. */
export interface TensorSpec {
  readonly name: string;
  readonly dims: readonly number[];
  readonly type: TensorType;
  /** Produces the tensor's values, row-major with ne0 fastest; called once, when the tensor is written. */
  readonly data: () => Float32Array;
}

/** What to write: ordered metadata and ordered tensors. */
export interface GgufFileSpec {
  readonly metadata: ReadonlyArray<readonly [string, GgufValue]>;
  readonly tensors: readonly TensorSpec[];
}

const TYPE_ID: Record<NumberKind | BigKind | "bool" | "string", number> = {
  u8: GgufValueType.UINT8,
  i8: GgufValueType.INT8,
  u16: GgufValueType.UINT16,
  i16: GgufValueType.INT16,
  u32: GgufValueType.UINT32,
  i32: GgufValueType.INT32,
  f32: GgufValueType.FLOAT32,
  bool: GgufValueType.BOOL,
  string: GgufValueType.STRING,
  u64: GgufValueType.UINT64,
  i64: GgufValueType.INT64,
  f64: GgufValueType.FLOAT64,
};

/** Little-endian byte builder for the header. */
class ByteSink {
  private buf = Buffer.alloc(1 << 16);
  length = 0;

  private reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = Buffer.alloc(size);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  bytes(b: Uint8Array): void {
    this.reserve(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }

  u8(v: number): void { this.reserve(1); this.buf.writeUInt8(v, this.length); this.length += 1; }
  i8(v: number): void { this.reserve(1); this.buf.writeInt8(v, this.length); this.length += 1; }
  u16(v: number): void { this.reserve(2); this.buf.writeUInt16LE(v, this.length); this.length += 2; }
  i16(v: number): void { this.reserve(2); this.buf.writeInt16LE(v, this.length); this.length += 2; }
  u32(v: number): void { this.reserve(4); this.buf.writeUInt32LE(v, this.length); this.length += 4; }
  i32(v: number): void { this.reserve(4); this.buf.writeInt32LE(v, this.length); this.length += 4; }
  f32(v: number): void { this.reserve(4); this.buf.writeFloatLE(v, this.length); this.length += 4; }
  f64(v: number): void { this.reserve(8); this.buf.writeDoubleLE(v, this.length); this.length += 8; }
  u64(v: bigint): void { this.reserve(8); this.buf.writeBigUInt64LE(v, this.length); this.length += 8; }
  i64(v: bigint): void { this.reserve(8); this.buf.writeBigInt64LE(v, this.length); this.length += 8; }

  str(s: string): void {
    const b = Buffer.from(s, "utf8");
    this.u64(BigInt(b.length));
    this.bytes(b);
  }

  padTo(alignment: number): void {
    const pad = (alignment - (this.length % alignment)) % alignment;
    this.bytes(new Uint8Array(pad));
  }

  result(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function writeScalar(sink: ByteSink, kind: NumberKind | BigKind | "bool" | "string", v: number | bigint | boolean | string): void {
  switch (kind) {
    case "u8": sink.u8(v as number); return;
    case "i8": sink.i8(v as number); return;
    case "u16": sink.u16(v as number); return;
    case "i16": sink.i16(v as number); return;
    case "u32": sink.u32(v as number); return;
    case "i32": sink.i32(v as number); return;
    case "f32": sink.f32(v as number); return;
    case "f64": sink.f64(v as number); return;
    case "u64": sink.u64(v as bigint); return;
    case "i64": sink.i64(v as bigint); return;
    case "bool": sink.u8(v ? 1 : 0); return;
    case "string": sink.str(v as string); return;
  }
}

function writeValue(sink: ByteSink, value: GgufValue): void {
  if (value.kind === "array") {
    sink.u32(GgufValueType.ARRAY);
    sink.u32(TYPE_ID[value.of]);
    sink.u64(BigInt(value.values.length));
    for (let i = 0; i < value.values.length; i++) writeScalar(sink, value.of, value.values[i]!);
    return;
  }
  sink.u32(TYPE_ID[value.kind]);
  writeScalar(sink, value.kind, value.value);
}

function elementCount(dims: readonly number[]): number {
  return dims.reduce((a, b) => a * b, 1);
}

function bytesPerElement(type: TensorType): number {
  return type === "f32" ? 4 : 2;
}

function alignUp(n: number, alignment: number): number {
  return Math.ceil(n / alignment) * alignment;
}

/** Serializes everything up to (and including the padding before) the tensor data section. */
export function encodeGgufHeader(spec: GgufFileSpec): Buffer {
  const sink = new ByteSink();
  sink.bytes(Buffer.from("GGUF", "ascii"));
  sink.u32(3);
  sink.u64(BigInt(spec.tensors.length));
  sink.u64(BigInt(spec.metadata.length));
  for (const [key, value] of spec.metadata) {
    sink.str(key);
    writeValue(sink, value);
  }
  let offset = 0;
  for (const t of spec.tensors) {
    sink.str(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(BigInt(d));
    sink.u32(t.type === "f32" ? GgmlType.F32 : GgmlType.F16);
    sink.u64(BigInt(offset));
    offset = alignUp(offset + elementCount(t.dims) * bytesPerElement(t.type), GGUF_ALIGNMENT);
  }
  sink.padTo(GGUF_ALIGNMENT);
  return sink.result();
}

/** IEEE 754 binary32 → binary16, round to nearest even (as ggml's `ggml_fp32_to_fp16`). */
export function f32ToF16Bits(value: number): number {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  f[0] = value;
  const x = u[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let m = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && (m & 1) !== 0)) m++;
    return sign | m;
  }
  let m = mant >>> 13;
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (m & 1) !== 0)) {
    m++;
    if (m === 0x400) { m = 0; e++; if (e >= 0x1f) return sign | 0x7c00; }
  }
  return sign | (e << 10) | m;
}

function encodeTensor(t: TensorSpec): Buffer {
  const values = t.data();
  const n = elementCount(t.dims);
  if (values.length !== n) throw new Error(`tensor ${t.name}: expected ${n} values, got ${values.length}`);
  if (t.type === "f32") {
    if (endianness() === "LE") return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
    const out = Buffer.alloc(n * 4);
    for (let i = 0; i < n; i++) out.writeFloatLE(values[i]!, i * 4);
    return out;
  }
  const out = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) out.writeUInt16LE(f32ToF16Bits(values[i]!), i * 2);
  return out;
}

/** Total file size in bytes that {@link writeGguf} will produce. */
export function ggufFileSize(spec: GgufFileSpec): number {
  let size = encodeGgufHeader(spec).length;
  for (const t of spec.tensors) size = alignUp(size + elementCount(t.dims) * bytesPerElement(t.type), GGUF_ALIGNMENT);
  return size;
}

/** Writes a GGUF v3 file to `path` (created or truncated). Not atomic: callers rename a temp file. */
export async function writeGguf(path: string, spec: GgufFileSpec): Promise<void> {
  const fh = await open(path, "w");
  try {
    const header = encodeGgufHeader(spec);
    await fh.write(header);
    let written = header.length;
    for (const t of spec.tensors) {
      const data = encodeTensor(t);
      await fh.write(data);
      written += data.length;
      const pad = alignUp(written, GGUF_ALIGNMENT) - written;
      if (pad > 0) await fh.write(Buffer.alloc(pad));
      written += pad;
    }
  } finally {
    await fh.close();
  }
}
