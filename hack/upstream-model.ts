/**
 * @module The generated model as a third-party server should see it: a copy
 * of the `test`/`bench` GGUF whose five CML markers are USER_DEFINED tokens
 * (GGUF token type 4) instead of CONTROL (3). Servers such as llama.cpp's and
 * vLLM print no control tokens in their output (vLLM's
 * `skip_special_tokens`), so with control-token markers every `[CALL]` would
 * reach the client as an empty string. A real model that learnt CML has its
 * markers as added (user-defined) tokens, which servers print as text; this
 * copy is that model. Weights, vocabulary and every token id are unchanged.
 */
import { copyFile, open, rename, stat } from "node:fs/promises";
import { ensureModel, SPECIAL_TOKEN_IDS, TokenType } from "../engine-pod/src/model/index.js";
import { CML_MARKERS } from "../common/src/index.js";

const KEY = "tokenizer.ggml.token_type";
const GGUF_ARRAY = 9;
const GGUF_INT32 = 5;

/** Path of the text-marker copy of a generated preset (made once, cached beside the original). */
export async function ensureUpstreamModel(preset: "test" | "bench"): Promise<string> {
  const source = await ensureModel({ preset });
  const target = source.replace(/\.gguf$/, "-textmarkers.gguf");
  if ((await stat(target).catch(() => undefined))?.isFile()) return target;
  const tmp = `${target}.${process.pid}.tmp`;
  await copyFile(source, tmp);
  const fh = await open(tmp, "r+");
  try {
    // The metadata sits at the start; the key is written as (u64 length, bytes), then the array header.
    const head = Buffer.alloc(Math.min((await fh.stat()).size, 64 * 1024 * 1024));
    await fh.read(head, 0, head.length, 0);
    const at = head.indexOf(Buffer.from(KEY, "utf8"));
    if (at < 0) throw new Error(`${source}: no ${KEY} in the GGUF metadata`);
    let p = at + KEY.length;
    if (head.readUInt32LE(p) !== GGUF_ARRAY || head.readUInt32LE(p + 4) !== GGUF_INT32) throw new Error(`${source}: ${KEY} is not an int32 array`);
    const count = Number(head.readBigUInt64LE(p + 8));
    p += 16;
    const patch = Buffer.alloc(4);
    for (let i = 0; i < CML_MARKERS.length; i++) {
      const id = SPECIAL_TOKEN_IDS.cmlFirst + i;
      if (id >= count || head.readInt32LE(p + 4 * id) !== TokenType.CONTROL) throw new Error(`${source}: token ${id} is not the CONTROL marker ${CML_MARKERS[i]}`);
      patch.writeInt32LE(TokenType.USER_DEFINED);
      await fh.write(patch, 0, 4, p + 4 * id);
    }
  } finally {
    await fh.close();
  }
  await rename(tmp, target);
  return target;
}
