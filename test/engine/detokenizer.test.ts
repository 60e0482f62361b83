/**
 * @module The streaming detokenizer on a byte-level vocabulary whose tokens
 * cross character boundaries (one token ends a Korean syllable and starts the
 * next, as byte-level BPE merges do in real vocabularies): every prefix of a
 * run of such tokens ends inside a character, and the text must still come
 * out whole, never as U+FFFD halves. The vocabulary is a byte table decoded
 * the way node-llama-cpp decodes (UTF-8 with replacement, optional context
 * tokens); the generated models' own vocabularies are covered, on llama.cpp,
 * by multibyte.test.ts.
 */
import t from "tap";
import type { LlamaModel, Token } from "node-llama-cpp";
import { CML, type CmlMarker } from "../../common/src/index.js";
import { StreamDetokenizer } from "../../engine-pod/src/engine/detokenizer.js";

/** A vocabulary of byte strings; decoding concatenates bytes and decodes UTF-8 with replacement. */
function byteVocab(pieces: Uint8Array[]): Pick<LlamaModel, "detokenize"> {
  const decode = (tokens: readonly Token[]): string => new TextDecoder().decode(Buffer.concat(tokens.map((id) => pieces[id]!)));
  return {
    // node-llama-cpp's contract: with context tokens, the text the new tokens add after them.
    detokenize(tokens: readonly Token[], _special?: boolean, last?: readonly Token[]): string {
      if (last === undefined || last.length === 0) return decode(tokens);
      const before = decode(last);
      const all = decode([...last, ...tokens]);
      return all.startsWith(before) ? all.slice(before.length) : decode(tokens);
    },
  } as Pick<LlamaModel, "detokenize">;
}

/** Splits `text`'s UTF-8 bytes into a `first`-byte token, then tokens of `size` bytes, ignoring character boundaries. */
function crossBoundaryTokens(text: string, size: number, first = size): { pieces: Uint8Array[]; tokens: Token[] } {
  const bytes = Buffer.from(text, "utf8");
  const pieces: Uint8Array[] = [bytes.subarray(0, first)];
  for (let i = first; i < bytes.length; i += size) pieces.push(bytes.subarray(i, i + size));
  return { pieces, tokens: pieces.map((_, i) => i as Token) };
}

t.test("a run of tokens that each end inside a character streams whole characters", async (t) => {
  // Korean syllables are 3 bytes. A 1-byte token then 3-byte tokens leaves every
  // prefix inside a syllable (40 tokens in a row); 2-, 4- and 5-byte tokens do so
  // at most of their boundaries.
  const text = "다용도실의통돌이를중지하고거실의에어컨을켜줘서울의날씨는어떻습니까부산은";
  for (const [size, first] of [[3, 1], [2, 2], [4, 4], [5, 5]] as const) {
    const { pieces, tokens } = crossBoundaryTokens(text, size, first);
    const detok = new StreamDetokenizer(byteVocab(pieces) as LlamaModel, new Map());
    let out = "";
    for (const tok of tokens) {
      const piece = detok.push(tok);
      t.notMatch(piece, /\uFFFD/, `${size}-byte tokens: no replacement character streamed`);
      out += piece;
    }
    const streamedBeforeEnd = out.length;
    out += detok.flush();
    t.equal(out, text, `${size}-byte tokens: the text is exact`);
    t.ok(streamedBeforeEnd >= text.length - 2, `${size}-byte tokens: complete characters streamed as they completed (${streamedBeforeEnd} of ${text.length} before the end)`);
  }
});

t.test("a marker token releases the text held before it", async (t) => {
  const text = "👍🏽";
  const { pieces, tokens } = crossBoundaryTokens(text, 3);
  const markerId = pieces.length as Token;
  pieces.push(new Uint8Array());
  const detok = new StreamDetokenizer(byteVocab(pieces) as LlamaModel, new Map<number, CmlMarker>([[markerId, CML.END]]));
  let out = "";
  for (const tok of tokens) out += detok.push(tok);
  out += detok.push(markerId);
  t.equal(out, `${text}${CML.END}`);
});
