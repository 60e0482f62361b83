/**
 * @module OpenAI's cl100k_base BPE ranks, read from the `js-tiktoken` package
 * (pinned by the lockfile, so every build reads the same bytes; no network).
 * The package ships them as one string: lines of `NAME OFFSET B64 B64 ...`,
 * where the i-th base64 token of a line has rank OFFSET + i. Loaded lazily and
 * synchronously (the file is ~1 MB; only vocabularies that use it pay for it).
 */
import { createRequire } from "node:module";

/** One BPE token: its raw bytes and its merge rank (lower merges first). */
export interface BpeRank {
  readonly bytes: Uint8Array;
  readonly rank: number;
}

/** The shape of `js-tiktoken/ranks/*` modules. */
interface TiktokenRanksModule {
  readonly bpe_ranks: string;
}

let cached: readonly BpeRank[] | undefined;

/** Parses `js-tiktoken`'s compressed rank string into tokens sorted by rank. */
export function parseBpeRanks(compressed: string): BpeRank[] {
  const out: BpeRank[] = [];
  for (const line of compressed.split("\n")) {
    if (line === "") continue;
    const [, offsetText, ...tokens] = line.split(" ");
    const offset = Number.parseInt(offsetText ?? "", 10);
    if (!Number.isInteger(offset)) throw new Error(`malformed BPE rank line (offset "${offsetText}")`);
    tokens.forEach((b64, i) => out.push({ bytes: new Uint8Array(Buffer.from(b64, "base64")), rank: offset + i }));
  }
  return out.sort((a, b) => a.rank - b.rank);
}

/** cl100k_base's ~100k tokens in rank order (special tokens such as `<|endoftext|>` are not ranks and not included). */
export function cl100kRanks(): readonly BpeRank[] {
  if (cached === undefined) {
    const mod = createRequire(import.meta.url)("js-tiktoken/ranks/cl100k_base") as TiktokenRanksModule;
    cached = parseBpeRanks(mod.bpe_ranks);
  }
  return cached;
}
