/**
 * @module The SPM ("llama") tokenizer vocabulary of generated models: special
 * and control tokens (the five CML markers and ChatML markers are CONTROL,
 * type 3, so llama.cpp parses them only when special tokens are asked for and
 * user text can never forge one), 256 byte-fallback tokens (any UTF-8
 * round-trips), and a few hundred normal tokens (characters, the SPM space
 * marker forms, common English/JSON/tool-call words with every prefix, so
 * SPM's pairwise merges always reach the whole word).
 */
import { CML_MARKERS } from "../../../common/src/index.js";
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

/**
 * Builds the vocabulary. Layout: specials (ids in {@link SPECIAL_TOKEN_IDS}),
 * then `<0x00>`..`<0xFF>`, then normal tokens. Normal tokens score by length
 * (longer merges win), ties broken by first appearance, as SPM log-probs would.
 *
 * With `size` larger than the core vocabulary, the rest is filled with
 * deterministic pseudo-words (lowercase letters, half with a leading ▁),
 * scored below every core token so they merge only after all core merges:
 * words of the core list still become single tokens. They make the output
 * projection and the sampler as wide as a real model's (32k), which is most of
 * a small model's per-token decode cost and none of its prefill cost.
 */
export function buildVocabulary(size?: number): Vocabulary {
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

  const normal: string[] = [SPM_SPACE];
  for (const c of LETTERS + DIGITS + PUNCT) normal.push(c, SPM_SPACE + c);
  for (const w of WORDS) normal.push(...prefixes(w), ...prefixes(SPM_SPACE + w));
  for (const c of CLUSTERS) normal.push(...prefixes(c.replaceAll("▁", SPM_SPACE).replaceAll(" ", SPM_SPACE)));
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
