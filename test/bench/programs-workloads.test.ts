/**
 * The programs bench's workloads are valid programs of its app: each parses
 * against the bench functions, is the same for the same seed, and deduces
 * as the paper's shapes do (the maps one task group; coders and reviewers
 * one group each; the chain all latency); and its bounds on hand-worked
 * DAGs: requests over depth, and the hardware bound with prefill, batched
 * steps and per-request overhead, for programs and for Parrot's concurrent
 * baseline under a batch cap.
 */
import t from "tap";
import { analyticBound, benchFunctions, buildProgram, dagLevels, fittedOverheadMs, hardwareBound, modelledMs, modelledWidths, WORKLOADS } from "../../bench/programs/workloads.js";
import { deduceObjectives } from "../../router/src/programs/dag.js";
import { parseProgram } from "../../router/src/programs/program-request.js";
import { appConfig } from "../router/fixtures.js";

const app = appConfig("programs", { tools: [], semanticFunctions: benchFunctions(8) });
const o = { chunks: 5, agents: 3, outputTokens: 8, chunkWords: 20 };
const limits = { maxValueBytes: 1 << 20, maxCalls: 1000 };

t.test("every workload parses, is seeded, and deduces as expected", async (t) => {
  for (const w of WORKLOADS) {
    t.same(buildProgram(w, o, 7), buildProgram(w, o, 7), `${w}: same seed, same program`);
    t.not(JSON.stringify(buildProgram(w, o, 7)), JSON.stringify(buildProgram(w, o, 8)), `${w}: another seed, another text`);
  }
  const count = (w: (typeof WORKLOADS)[number]): Record<string, number> => {
    const p = parseProgram(app, buildProgram(w, o, 1), limits);
    const out: Record<string, number> = {};
    for (const d of deduceObjectives(p.dag, p.finals).values()) {
      const k = d.group !== undefined ? `${d.objective}:${d.group}` : d.objective;
      out[k] = (out[k] ?? 0) + 1;
    }
    return out;
  };
  t.same(count("map-reduce"), { "task-group:stage-1": 5, latency: 1 });
  t.same(count("multi-agent"), { latency: 4, "task-group:stage-2": 3, "task-group:stage-1": 3 });
  t.same(count("chain"), { latency: 5 });
  t.equal(analyticBound("map-reduce", o), 3);
  t.equal(analyticBound("multi-agent", o), 2.5);
  t.equal(analyticBound("chain", o), 1);
});

const small = { chunks: 4, agents: 2, outputTokens: 10, chunkWords: 10 };

t.test("levels and the analytic bound", async (t) => {
  t.same(dagLevels("map-reduce", small), [4, 1]);
  t.same(dagLevels("multi-agent", small), [1, 2, 2, 2]);
  t.same(dagLevels("chain", small), [1, 1, 1, 1]);
  t.equal(analyticBound("map-reduce", small), 2.5);
  t.equal(analyticBound("multi-agent", small), 1.75);
  t.equal(analyticBound("chain", small), 1);
});

t.test("the hardware bound", async (t) => {
  const levels = [4, 1];
  const none = { client: 0, programs: 0 };
  const flat = { prefillMsPerToken: 1, stepMs: () => 10, outputTokens: 10, overheadMs: 0 };
  t.equal(hardwareBound(levels, none, flat), 2.5, "free batching, no prefill, no overhead: the analytic bound");
  const linear = { ...flat, stepMs: (b: number) => 10 * b };
  t.equal(hardwareBound(levels, none, linear), 1, "a step of w costs w steps: nothing to gain");
  // Client 5 x (10 + 100) = 550; program (4 x 10 + 100) + (10 + 100) = 250.
  t.equal(hardwareBound(levels, { client: 10, programs: 10 }, flat), 2.2, "prefill does not batch");
  // Client 5 x (10 + 100) = 550; program (4 x 5 + 100) + (5 + 100) = 225: forked prefixes.
  t.equal(hardwareBound(levels, { client: 10, programs: 5 }, flat), 550 / 225);
  // Overhead 50, step(4) = 20: client 5 x 150 = 750; program (50 + 200) + (50 + 100) = 400.
  const costs = { ...flat, stepMs: (b: number) => (b === 4 ? 20 : 10), overheadMs: 50 };
  t.equal(hardwareBound(levels, none, costs), 750 / 400);
  t.equal(fittedOverheadMs(750, 5, 0, costs), 50, "the overhead that explains the client's time");
  t.equal(fittedOverheadMs(100, 5, 0, costs), 0, "never negative");
});

t.test("the modelled time of Parrot's concurrent baseline under a batch cap", async (t) => {
  // 16 maps and a reduce; step(b) = 10 + 5b; no prefill or overhead: only the decode rounds differ.
  const levels = [16, 1];
  const c = { prefillMsPerToken: 1, stepMs: (b: number) => 10 + 5 * b, outputTokens: 10, overheadMs: 0 };
  // Program: 10 x step(16) + 10 x step(1) = 900 + 150.
  t.equal(modelledMs(levels, { kind: "program" }, 0, c), 1050);
  // Cap 4: four rounds of 10 x step(4) = 4 x 300, then the reduce 150.
  t.equal(modelledMs(levels, { kind: "concurrent", cap: 4 }, 0, c), 1350);
  // Cap 5: rounds of 5, 5, 5, 1 = 3 x 350 + 150, then 150.
  t.equal(modelledMs(levels, { kind: "concurrent", cap: 5 }, 0, c), 1350);
  t.equal(modelledMs(levels, { kind: "concurrent", cap: 64 }, 0, c), modelledMs(levels, { kind: "program" }, 0, c), "a cap above the width changes nothing");
  // Client: 17 x 10 x step(1) = 2550; the bound is the ratio.
  t.equal(modelledMs(levels, { kind: "client" }, 0, c), 2550);
  t.equal(hardwareBound(levels, { client: 0, programs: 0 }, c), 2550 / 1050);
  t.same(modelledWidths(levels, 5), [1, 5, 16], "the widths to measure: 1, the cap, the level, the last round");
  t.same(modelledWidths([16, 1], 4), [1, 4, 16]);
});
