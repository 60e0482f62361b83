/**
 * @module The three program workloads of `npm run bench -- programs`, as
 * program bodies for `POST .../programs` over one app's semantic functions,
 * built from a seed: a map-reduce summary of one document cut into N chunks,
 * a multi-agent shape after Parrot §8.4 (architect → K coders → K reviewers
 * reading all the code → K revisions), and a chain of dependent summaries.
 * Also each workload's analytic bound: requests over the DAG's depth, the
 * speedup a server could reach if a batch of parallel requests cost what one
 * request costs and round trips were free; and its hardware bound, the same
 * with the measured costs of prefill and of batched decode steps.
 */
import type { SemanticFunction } from "../../common/src/semantic-function.js";
import { seededRandom } from "../lib/stats.js";

export const WORKLOADS = ["map-reduce", "multi-agent", "chain"] as const;
export type Workload = (typeof WORKLOADS)[number];

export interface WorkloadOptions {
  chunks: number;
  agents: number;
  outputTokens: number;
  chunkWords: number;
}

const out = (name: string, maxTokens: number): SemanticFunction["outputs"][number] => ({ name, maxTokens, temperature: 0 });

export function benchFunctions(outputTokens: number): SemanticFunction[] {
  const fn = (name: string, template: string, output: string): SemanticFunction => ({ name, template, outputs: [out(output, outputTokens)], tools: false });
  return [
    fn("summarize", "Summarize this part of the document in two sentences. Keep every name and figure it mentions.\n\nPart:\n{{input:chunk}}\n\nSummary: {{output:summary}}", "summary"),
    fn("combine", "Combine these partial summaries into one summary of the whole document.\n\n{{input:summaries}}\n\nSummary: {{output:summary}}", "summary"),
    fn("architect", "You are the architect. Split this task into files and say what each file does.\n\nTask: {{input:task}}\n\nDesign: {{output:design}}", "design"),
    fn("code", "You are a coder. Follow the design.\n\nDesign:\n{{input:design}}\n\nWrite the file {{input:file}}.\n\nCode: {{output:code}}", "code"),
    fn("review", "You are a reviewer. Here is all the code of the project.\n\n{{input:code}}\n\nReview the file {{input:file}}: list its bugs.\n\nReview: {{output:review}}", "review"),
    fn("revise", "You are a coder. Revise your file after the review.\n\nCode:\n{{input:code}}\n\nReview:\n{{input:review}}\n\nRevised code: {{output:code}}", "code"),
    fn("refine", "Refine the running summary with the next part of the document.\n\nSummary so far:\n{{input:summary}}\n\nNext part:\n{{input:chunk}}\n\nUpdated summary: {{output:summary}}", "summary"),
  ];
}

const WORDS = (
  "revenue cost margin region office team board quarter growth forecast market customer order supplier contract risk plan budget " +
  "hire engineer product release incident review audit cash reserve dividend north south east west Ada Omar Lund Berg Nasser percent million"
).split(" ");

function text(rng: () => number, words: number): string {
  return Array.from({ length: words }, () => WORDS[Math.floor(rng() * WORDS.length)]!).join(" ") + ".";
}

/** The program body of `workload` for `seed`. */
export function buildProgram(workload: Workload, o: WorkloadOptions, seed: number): Record<string, unknown> {
  const rng = seededRandom(seed * 104_729 + WORKLOADS.indexOf(workload));
  const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
  switch (workload) {
    case "map-reduce":
      return {
        inputs: Object.fromEntries(range(o.chunks).map((i) => [`chunk${i}`, text(rng, o.chunkWords)])),
        calls: [
          ...range(o.chunks).map((i) => ({ id: `map${i}`, function: "summarize", inputs: { chunk: `chunk${i}` }, outputs: { summary: `s${i}` } })),
          { id: "reduce", function: "combine", inputs: { summaries: range(o.chunks).map((i) => `s${i}`) }, outputs: { summary: "final" } },
        ],
        outputs: { final: "latency" },
      };
    case "multi-agent": {
      const K = o.agents;
      return {
        inputs: { task: `Build ${text(rng, 12)}`, ...Object.fromEntries(range(K).map((i) => [`file${i}`, `module_${i}.py`])) },
        calls: [
          { id: "architect", function: "architect", outputs: { design: "design" } },
          ...range(K).map((i) => ({ id: `coder${i}`, function: "code", inputs: { file: `file${i}` }, outputs: { code: `code${i}` } })),
          ...range(K).map((i) => ({ id: `reviewer${i}`, function: "review", inputs: { code: range(K).map((j) => `code${j}`), file: `file${i}` }, outputs: { review: `review${i}` } })),
          ...range(K).map((i) => ({ id: `reviser${i}`, function: "revise", inputs: { code: `code${i}`, review: `review${i}` }, outputs: { code: `final${i}` } })),
        ],
        outputs: Object.fromEntries(range(K).map((i) => [`final${i}`, "latency"])),
      };
    }
    case "chain":
      return {
        inputs: { start: "(nothing yet)", ...Object.fromEntries(range(o.chunks).map((i) => [`chunk${i}`, text(rng, o.chunkWords)])) },
        calls: range(o.chunks).map((i) => ({ id: `step${i}`, function: "refine", inputs: { summary: i === 0 ? "start" : `s${i - 1}`, chunk: `chunk${i}` }, outputs: { summary: `s${i}` } })),
        outputs: { [`s${o.chunks - 1}`]: "latency" },
      };
  }
}

/** Requests per level of the DAG (a level's requests need only values produced by earlier levels). */
export function dagLevels(workload: Workload, o: WorkloadOptions): number[] {
  switch (workload) {
    case "map-reduce":
      return [o.chunks, 1];
    case "multi-agent":
      return [1, o.agents, o.agents, o.agents];
    case "chain":
      return Array.from({ length: o.chunks }, () => 1);
  }
}

/** Requests over the DAG's depth: the speedup if parallel requests cost one and round trips were free. */
export function analyticBound(workload: Workload, o: WorkloadOptions): number {
  const levels = dagLevels(workload, o);
  return levels.reduce((a, b) => a + b, 0) / levels.length;
}

/** What one request costs on the hardware the bench runs on. */
export interface RequestCosts {
  /** ms per prefilled token. */
  prefillMsPerToken: number;
  /** ms per decode step with `b` requests decoding in lockstep. */
  stepMs(b: number): number;
  /** Tokens each request decodes. */
  outputTokens: number;
  /** Fixed ms per request outside the forward passes (HTTP, session setup, scheduling). */
  overheadMs: number;
}

/** How a mode runs each DAG level, for {@link modelledMs}. */
export type BoundMode =
  /** One request at a time, each paying its own overhead. */
  | { kind: "client" }
  /** A level's requests sent together, at most `cap` decoding at once (Parrot's latency-capped baseline). */
  | { kind: "concurrent"; cap: number }
  /** A level's requests sent together and batched together. */
  | { kind: "program" };

/**
 * The modelled time of one run of a DAG with levels `levels` on this
 * hardware. The client pays, per request, its overhead, its prefill and n
 * decode steps alone (`o + p·c + n·step(1)`). A program or the concurrent
 * baseline pays, per level of width w, one overhead (its requests are sent
 * together), every request's prefill (a prefill is compute: it does not
 * batch) and n lockstep steps per round of at most `cap` requests
 * (`o + w·p·c + Σ n·step(b)`; a program's one round is the whole level).
 * p is the tokens the mode actually prefilled per request (programs fork
 * shared prefixes).
 */
export function modelledMs(levels: readonly number[], mode: BoundMode, prefilledPerRequest: number, c: RequestCosts): number {
  let ms = 0;
  for (const w of levels) {
    if (mode.kind === "client") {
      ms += w * (c.overheadMs + prefilledPerRequest * c.prefillMsPerToken + c.outputTokens * c.stepMs(1));
      continue;
    }
    const width = mode.kind === "concurrent" ? Math.max(1, Math.min(w, mode.cap)) : w;
    ms += c.overheadMs + w * prefilledPerRequest * c.prefillMsPerToken;
    for (let left = w; left > 0; left -= width) ms += c.outputTokens * c.stepMs(Math.min(width, left));
  }
  return ms;
}

/** Batch widths {@link modelledMs} needs step costs for. */
export function modelledWidths(levels: readonly number[], cap: number): number[] {
  const out = new Set<number>([1]);
  for (const w of levels) {
    out.add(w);
    out.add(Math.min(w, cap));
    if (w > cap && w % cap !== 0) out.add(w % cap);
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The speedup a program could reach over the one-at-a-time client on this
 * hardware ({@link modelledMs}). With step(w) = step(1) and no prefill or
 * overhead this is the analytic bound; on a CPU, where step(w) grows almost
 * linearly in w and prefill is serial, it is much less.
 */
export function hardwareBound(levels: readonly number[], prefilledPerRequest: { client: number; programs: number }, c: RequestCosts): number {
  const programs = modelledMs(levels, { kind: "program" }, prefilledPerRequest.programs, c);
  return programs > 0 ? modelledMs(levels, { kind: "client" }, prefilledPerRequest.client, c) / programs : 1;
}

/** The per-request overhead that makes the client's modelled time equal its measured time (never negative). */
export function fittedOverheadMs(clientMs: number, requests: number, prefilledPerRequest: number, c: Omit<RequestCosts, "overheadMs">): number {
  return Math.max(0, clientMs / requests - prefilledPerRequest * c.prefillMsPerToken - c.outputTokens * c.stepMs(1));
}
