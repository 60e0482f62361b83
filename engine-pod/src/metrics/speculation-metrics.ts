/**
 * @module Prometheus metrics of speculative tool calls, read at scrape time
 * from the tool cache's and speculation's counters: speculations started,
 * hits, misses, wasted results and wasted tool time, draft tokens proposed
 * and accepted (O2), O3 appends, and the tool time saved per hit.
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { SpeculationSnapshot } from "../speculation/speculation-stats.js";

const PREFIX = "interlace_engine_";
const SAVED_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Registers the speculation metrics on `registry`, reading `read()` at each scrape. */
export function registerSpeculationMetrics(registry: Registry, read: () => SpeculationSnapshot | undefined): void {
  const registers = [registry];
  const last = new Map<string, number>();
  const counter = (name: string, help: string, value: (s: SpeculationSnapshot) => number, scale = 1): void => {
    new Counter({
      name: `${PREFIX}${name}`,
      help,
      registers,
      collect() {
        const s = read();
        if (s === undefined) return;
        const v = value(s) * scale;
        const delta = v - (last.get(name) ?? 0);
        if (delta > 0) this.inc(delta);
        last.set(name, v);
      },
    });
  };
  counter("speculations_started_total", "Tool calls started speculatively, before the model asked for them.", (s) => s.cache.stored.speculative);
  counter("tool_cache_posted_total", "Tool outputs a client posted to cache-tool-output.", (s) => s.cache.stored.client);
  counter("speculation_hits_total", "Model calls served from the tool cache.", (s) => s.cache.hits);
  counter("speculation_misses_total", "Model calls of speculation-enabled sessions not found in the tool cache.", (s) => s.cache.misses);
  counter("speculation_wasted_total", "Cached results discarded unused (expired, evicted, session ended).", (s) => s.cache.wasted);
  counter("speculation_wasted_tool_seconds_total", "Tool time spent on discarded speculative calls.", (s) => s.cache.wastedToolMs, 1 / 1000);
  counter("draft_runs_total", "Draft-model runs (one per speculation turn).", (s) => s.stats.draftRuns);
  counter("draft_tokens_proposed_total", "Draft tokens proposed for one-pass validation (O2).", (s) => s.stats.draftTokensProposed);
  counter("draft_tokens_accepted_total", "Draft tokens the main model accepted (O2): decode steps skipped.", (s) => s.stats.draftTokensAccepted);
  counter("speculation_o3_appends_total", "Cached results appended at a call's end without a trap (O3).", (s) => s.stats.o3Appends);
  new Gauge({
    name: `${PREFIX}tool_cache_entries`,
    help: "Entries in the tool cache.",
    registers,
    collect() {
      const s = read();
      if (s !== undefined) this.set(s.cache.entries);
    },
  });
  new Gauge({
    name: `${PREFIX}draft_model_loaded`,
    help: "1 when a draft model is loaded (label: its path).",
    labelNames: ["model"],
    registers,
    collect() {
      const s = read();
      if (s !== undefined) this.set({ model: s.draftModel ?? "" }, s.draftModel === null ? 0 : 1);
    },
  });
  new Histogram({
    name: `${PREFIX}speculation_time_saved_seconds`,
    help: "Tool time a hit masked: how long its speculative call had run when the model asked for it.",
    buckets: SAVED_BUCKETS,
    registers,
    collect() {
      const s = read();
      if (s === undefined) return;
      for (const ms of s.stats.drainSaved()) this.observe(ms / 1000);
    },
  });
}
