/**
 * The programs bench's workloads are valid programs of its app: each parses
 * against the bench functions, is the same for the same seed, and deduces
 * as the paper's shapes do (the maps one task group; coders and reviewers
 * one group each; the chain all latency).
 */
import t from "tap";
import { analyticBound, benchFunctions, buildProgram, WORKLOADS } from "../../bench/programs/workloads.js";
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
