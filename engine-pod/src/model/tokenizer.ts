/**
 * @module The SPM ("llama") tokenizer vocabulary of generated models: special
 * and control tokens (the five CML markers and ChatML markers are CONTROL,
 * type 3, so llama.cpp parses them only when special tokens are asked for and
 * user text can never forge one), 256 byte-fallback tokens (any UTF-8
 * round-trips), and a few hundred normal tokens (characters, the SPM space
 * marker forms, common English/JSON/tool-call words with every prefix, so
 * SPM's pairwise merges always reach the whole word). Larger vocabularies are
 * padded either with filler pseudo-words (`core`) or with the most frequent
 * tokens of OpenAI's cl100k_base BPE (`cl100k`), which makes a generated
 * model spend as many tokens on a tool call or a sentence as a real one.
 */
import { CML_MARKERS } from "../../../common/src/index.js";
import { cl100kRanks } from "./cl100k-ranks.js";
import { Prng } from "./prng.js";

/** GGUF `tokenizer.ggml.token_type` values (llama.cpp `llama_token_type`). */
export const TokenType = {
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

/** SentencePiece's space marker (U+2581). */
export const SPM_SPACE = "\u2581";

/** ChatML turn markers (control tokens; `<|im_end|>` is also an end-of-generation token in llama.cpp). */
export const CHATML = { START: "<|im_start|>", END: "<|im_end|>" } as const;

/** A simple ChatML Jinja template (`tokenizer.chat_template`), the form node-llama-cpp and llama.cpp recognise. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}" +
  "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** Fixed ids of the special tokens (the same in every generated model). */
export const SPECIAL_TOKEN_IDS = {
  unk: 0,
  bos: 1,
  eos: 2,
  pad: 3,
  imStart: 4,
  imEnd: 5,
  /** `[CALL]`, `[INTR]`, `[TRAP]`, `[END]`, `[HEAD]` in {@link CML_MARKERS} order. */
  cmlFirst: 6,
} as const;

/**
 * What pads a vocabulary beyond its core tokens: `core` = deterministic filler
 * pseudo-words (width only, no compression); `cl100k` = cl100k_base BPE tokens
 * in rank order (a real general-purpose vocabulary).
 */
export type VocabularySource = "core" | "cl100k";

/** The vocabulary as three parallel arrays, ready for `tokenizer.ggml.*`. */
export interface Vocabulary {
  readonly tokens: readonly string[];
  readonly scores: Float32Array;
  readonly types: Int32Array;
}

const LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGITS = "0123456789";
const PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/** Words that appear in prompts, tool calls (JSON and Python style) and results. Each gets a bare and a ▁ form. */
const WORDS = [
  // English function words and common verbs
  "the", "a", "an", "and", "or", "of", "to", "in", "is", "it", "for", "on", "with", "that", "this", "you", "we", "be",
  "are", "was", "not", "have", "has", "can", "will", "what", "how", "when", "which", "if", "then", "as", "at", "by",
  "from", "all", "do", "use", "get", "set", "let", "me", "my", "your", "I", "The", "It", "Let", "OK", "ok", "yes", "no",
  "please", "answer", "question", "check", "done", "wait", "next", "first", "now", "here", "there", "now",
  "hello", "world", "Hello", "thanks", "user", "assistant", "system", "message", "content", "role",
  // tools and calls
  "tool", "tools", "call", "calls", "result", "results", "value", "error", "name", "arguments", "args", "params",
  "parameters", "properties", "required", "type", "object", "array", "string", "number", "integer", "boolean",
  "description", "function", "id", "data", "text", "query", "search", "weather", "city", "time", "date", "echo",
  "sleep", "ms", "add", "sum", "calculate", "calculator", "expression", "latency", "status", "output", "input",
  "true", "false", "null", "None", "True", "False", "def", "return", "print", "import", "self",
];

/** Punctuation clusters common in JSON and Python calls (with ▁ where a space usually precedes them). */
const CLUSTERS = [
  "{\"", "\"}", "\":", "\",", "\"]", "[\"", "}}", "},", "{}", "[]", "()", "(\"", "\")", "='", "=\"", "',", "')",
  "__", "...", "->", "==", ", ", "▁{\"", "▁\"", "\":▁\"", "\",▁\"", "\":▁{\"", "\"}}", "▁==", "▁->", "▁=",
];

/** Every prefix of `s` (by code point), shortest first, `s` included. */
function prefixes(s: string): string[] {
  const chars = Array.from(s);
  const out: string[] = [];
  for (let i = 1; i <= chars.length; i++) out.push(chars.slice(0, i).join(""));
  return out;
}

/** Seed of the filler-token stream: fixed, so every weight seed shares one vocabulary. */
const FILLER_SEED = 0x5eed_70c5;

/** Score base of core tokens cl100k_base lacks: below every BPE rank (-rank > -CORE_ONLY_SCORE_BASE), exact in float32. */
const CORE_ONLY_SCORE_BASE = 1_000_000;

/**
 * Builds the vocabulary. Layout: specials (ids in {@link SPECIAL_TOKEN_IDS}),
 * then `<0x00>`..`<0xFF>`, then the core normal tokens, then padding up to
 * `size` from `source`. The ids of specials, bytes and core tokens are the
 * same for every size and source.
 *
 * `core` (default): core tokens score by length (longer merges win), ties
 * broken by first appearance, as SPM log-probs would. With `size` larger than
 * the core vocabulary, the rest is filled with deterministic pseudo-words
 * (lowercase letters, half with a leading ▁), scored below every core token so
 * they merge only after all core merges: words of the core list still become
 * single tokens. They make the output projection and the sampler as wide as a
 * real model's (32k), which is most of a small model's per-token decode cost
 * and none of its prefill cost.
 *
 * `cl100k`: the rest is cl100k_base's tokens in rank order, see
 * {@link cl100kSpmTokens}. Every normal token scores -rank, so llama.cpp's SPM
 * tokenizer (highest-scoring adjacent pair first) performs tiktoken's BPE
 * merges in tiktoken's order; core tokens cl100k lacks score below all ranks.
 */
export function buildVocabulary(size?: number, source: VocabularySource = "core"): Vocabulary {
  const tokens: string[] = [];
  const types: number[] = [];
  const scores: number[] = [];
  const seen = new Set<string>();
  const add = (text: string, type: number, score: number): void => {
    if (seen.has(text)) return;
    seen.add(text);
    tokens.push(text);
    types.push(type);
    scores.push(score);
  };

  add("<unk>", TokenType.UNKNOWN, 0);
  add("<s>", TokenType.CONTROL, 0);
  add("</s>", TokenType.CONTROL, 0);
  add("<pad>", TokenType.CONTROL, 0);
  add(CHATML.START, TokenType.CONTROL, 0);
  add(CHATML.END, TokenType.CONTROL, 0);
  for (const marker of CML_MARKERS) add(marker, TokenType.CONTROL, 0);
  for (let b = 0; b < 256; b++) add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`, TokenType.BYTE, 0);
  const specials = tokens.filter((_, id) => types[id] === TokenType.CONTROL || types[id] === TokenType.UNKNOWN);

  const normal: string[] = [SPM_SPACE];
  for (const c of LETTERS + DIGITS + PUNCT) normal.push(c, SPM_SPACE + c);
  for (const w of WORDS) normal.push(...prefixes(w), ...prefixes(SPM_SPACE + w));
  for (const c of CLUSTERS) normal.push(...prefixes(c.replaceAll("▁", SPM_SPACE).replaceAll(" ", SPM_SPACE)));

  if (source === "cl100k") {
    const bpe = cl100kSpmTokens(specials);
    const rankOf = new Map(bpe.map(({ text, rank }) => [text, rank]));
    let coreOnly = 0;
    for (const text of normal) {
      if (seen.has(text)) continue;
      const rank = rankOf.get(text);
      add(text, TokenType.NORMAL, rank !== undefined ? -rank : -(CORE_ONLY_SCORE_BASE + coreOnly++));
    }
    for (const { text, rank } of bpe) {
      if (size !== undefined && tokens.length >= size) break;
      add(text, TokenType.NORMAL, -rank);
    }
    return { tokens, scores: Float32Array.from(scores), types: Int32Array.from(types) };
  }

  let rank = 0;
  for (const text of normal) {
    if (seen.has(text)) continue;
    // Length dominates; rank only breaks ties, and stays far below 1.
    add(text, TokenType.NORMAL, Array.from(text).length - rank * 1e-4);
    rank++;
  }
  if (size !== undefined && size > tokens.length) {
    const prng = new Prng(FILLER_SEED);
    let filler = 0;
    while (tokens.length < size) {
      const len = 2 + (prng.nextU32() % 7);
      let word = prng.nextU32() % 2 === 0 ? SPM_SPACE : "";
      for (let i = 0; i < len; i++) word += LETTERS[prng.nextU32() % 26];
      if (seen.has(word)) continue;
      add(word, TokenType.NORMAL, -10 - filler * 1e-4);
      filler++;
    }
  }
  return { tokens, scores: Float32Array.from(scores), types: Int32Array.from(types) };
}

/**
 * Every proper prefix and suffix (two code points or longer) of the special
 * tokens' texts. SPM merges two adjacent symbols when their concatenation is
 * in the vocabulary, whatever its type, and a special's score (0) beats every
 * BPE score; a symbol is a single character or a vocabulary token, so with
 * none of these in the vocabulary no split of a special into two symbols
 * exists and plain text can never merge into `[CALL]`, `<|im_end|>`, `</s>`...
 */
export function specialFragments(specials: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const special of specials) {
    const chars = Array.from(special);
    for (let i = 2; i < chars.length; i++) {
      out.add(chars.slice(0, i).join(""));
      out.add(chars.slice(chars.length - i).join(""));
    }
  }
  return out;
}

/**
 * cl100k_base's tokens in SPM form, rank order: only tokens whose bytes are
 * valid UTF-8 on their own (SPM works on characters; partial characters are
 * what byte fallback is for), spaces written as ▁ (llama.cpp escapes every
 * space of the input to ▁ before merging), none that already contains a
 * literal ▁ (it would read back as a space) and none that is a fragment of a
 * special token ({@link specialFragments}).
 */
function cl100kSpmTokens(specials: readonly string[]): Array<{ text: string; rank: number }> {
  // fatal: reject invalid UTF-8 instead of substituting U+FFFD; ignoreBOM: keep a leading U+FEFF as text.
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const fragments = specialFragments(specials);
  const out: Array<{ text: string; rank: number }> = [];
  for (const { bytes, rank } of cl100kRanks()) {
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      continue;
    }
    if (text.includes(SPM_SPACE)) continue;
    const spm = text.replaceAll(" ", SPM_SPACE);
    if (fragments.has(spm)) continue;
    out.push({ text: spm, rank });
  }
  return out;
}
