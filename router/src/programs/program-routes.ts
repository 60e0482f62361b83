/**
 * @module The program API of an app, answered by any router replica for any
 * program (the program store reads and writes the shared programs bucket):
 * - `POST /v1/apps/{ns}/{app}/programs`: submit a program (program-request.ts);
 *   201 at once with a handle per variable, each call's deduced objective,
 *   and the URLs below; `"open": true` keeps it open for more calls;
 * - `POST .../programs/{id}/calls`: more calls (and inputs and functions) for
 *   an open program, as its client makes them; `"close": true` ends it
 *   (409 `program_closed` once closed or ended);
 * - `DELETE .../programs/{id}`: cancels it and its running calls, where it
 *   runs; answers once it has ended, with the reason;
 * - `GET .../programs/{id}`: the program's state (variables, calls, engines);
 * - `GET .../programs/{id}/events`: server-sent events, one per variable as
 *   it is produced (`value`) or fails (`failed`, with the cause), then
 *   `done`; past events first, `Last-Event-ID` resumes;
 * - `GET .../variables/{id}?criteria=latency|throughput&timeoutMs=N`: the
 *   variable's value, long-polled: answers as soon as it is produced or
 *   failed (200), or with 202 `pending` after `timeoutMs` (default 30 s). A
 *   `criteria` marks the variable a final output with that criterion
 *   (Parrot's `get(perf=…)`), re-deducing the objectives of calls not yet
 *   started.
 */
import type { Express, Request, RequestHandler, Response } from "express";
import { startEventStream } from "../../../common/src/event-stream.js";
import { appOf, param } from "../app-routes.js";
import type { AppRegistry } from "../app-registry.js";
import { principalOf } from "../../../common/src/security/http-auth.js";
import { badRequest, HttpError, notFound, RouterCode } from "../errors.js";
import type { RouterMetrics } from "../metrics.js";
import { OBJECTIVE_PRIORITY } from "./dag.js";
import { extendProgram, parseProgram, type ProgramLimits } from "./program-request.js";
import { replay } from "./program-replica.js";
import type { ProgramEvent, ProgramRun, VariableState } from "./program-run.js";
import type { ProgramStore } from "./program-store.js";

export interface ProgramRoutesContext {
  apps: AppRegistry;
  metrics: RouterMetrics;
  store: ProgramStore;
  limits: ProgramLimits;
}

const MAX_POLL_MS = 120_000;

function base(ns: string, app: string): string {
  return `/v1/apps/${encodeURIComponent(ns)}/${encodeURIComponent(app)}`;
}

function variableView(run: ProgramRun, name: string, s: VariableState): Record<string, unknown> {
  const view: Record<string, unknown> = { id: run.variableId(name), name, program: run.id, state: s.state };
  if (s.state === "ready") view["value"] = s.value;
  if (s.state === "failed") view["error"] = s.error;
  const criterion = run.program.finals.get(name);
  if (criterion !== undefined) view["criteria"] = criterion;
  return view;
}

/** Handles of `variables` and the deduced objective of `calls`, as creation and extension answer them. */
function handles(run: ProgramRun, variables: Iterable<string>, calls: readonly string[]): Record<string, unknown> {
  const root = base(run.config.namespace, run.config.name);
  const program = run.program;
  return {
    variables: Object.fromEntries([...variables].map((v) => [v, { id: run.variableId(v), url: `${root}/variables/${run.variableId(v)}` }])),
    calls: calls.map((id) => {
      const d = run.objectiveOf(id);
      return { id, function: program.calls.find((c) => c.id === id)!.fn.name, objective: d.objective, priority: OBJECTIVE_PRIORITY[d.objective], ...(d.group !== undefined ? { group: d.group, groupSize: d.groupSize } : {}) };
    }),
  };
}

function writeEvent(res: Response, index: number, e: ProgramEvent): void {
  res.write(`event: ${e.type}\nid: ${index}\ndata: ${JSON.stringify(e)}\n\n`);
}

export function mountProgramRoutes(app: Express, json: RequestHandler, ctx: ProgramRoutesContext): void {
  /** The caller's program of the app in the URL, from whichever replica runs it (404 / 403 with the reason). */
  const replicaOf = (req: Request, res: Response, id = param(req, "id")) => ctx.store.get(appOf(ctx, req).config, id, principalOf(res));

  app.post("/v1/apps/:ns/:app/programs", json, async (req: Request, res: Response) => {
    const { config } = appOf(ctx, req);
    const program = parseProgram(config, req.body, ctx.limits);
    const { run } = await ctx.store.create(config, req.body, principalOf(res));
    const root = base(config.namespace, config.name);
    res.status(201).json({
      id: run.id,
      state: run.state,
      url: `${root}/programs/${run.id}`,
      eventsUrl: `${root}/programs/${run.id}/events`,
      callsUrl: `${root}/programs/${run.id}/calls`,
      ...handles(run, program.dag.producer.keys(), program.dag.order),
      outputs: Object.fromEntries(program.finals),
    });
  });

  app.post("/v1/apps/:ns/:app/programs/:id/calls", json, async (req: Request, res: Response) => {
    const replica = await replicaOf(req, res);
    const run = replica.run;
    const refuseClosed = (state: string): never => {
      ctx.metrics.rejected.inc({ code: RouterCode.ProgramClosed });
      throw new HttpError(409, RouterCode.ProgramClosed, `program ${run.id} is ${state === "running" ? "closed" : state}: it takes no more calls; submit a new program`);
    };
    if (!run.program.open || run.done) refuseClosed(run.state);
    let added: string[] = [];
    let variables: string[] = [];
    // Checked against the program as stored (another replica may have extended or closed it meanwhile).
    await ctx.store.mutate(replica, { kind: "extend", body: req.body }, (spec) => {
      const before = replay(spec);
      if (!before.open) refuseClosed("closed");
      const next = extendProgram(spec.config, before, req.body, ctx.limits);
      added = next.calls.slice(before.calls.length).map((c) => c.id);
      variables = [...next.dag.producer.keys()].filter((v) => !before.dag.producer.has(v));
    });
    res.status(200).json({ id: run.id, state: run.state, ...handles(run, variables, added) });
  });

  app.delete("/v1/apps/:ns/:app/programs/:id", async (req: Request, res: Response) => {
    const replica = await replicaOf(req, res);
    const run = replica.run;
    const cancelled = await ctx.store.cancel(replica, "cancelled by its client (DELETE)");
    const last = run.events.at(-1);
    res.status(200).json({ id: run.id, state: run.state, cancelled, failed: last?.type === "done" ? last.failed : [], ...(last?.type === "done" && last.reason !== undefined ? { reason: last.reason } : {}) });
  });

  app.get("/v1/apps/:ns/:app/programs/:id", async (req: Request, res: Response) => {
    const { run } = await replicaOf(req, res);
    const last = run.events.at(-1);
    res.json({
      id: run.id,
      state: run.state,
      ...(last?.type === "done" && last.reason !== undefined ? { reason: last.reason } : {}),
      ...(run.finishedAt !== undefined ? { latencyMs: run.finishedAt - run.startedAt } : {}),
      variables: Object.fromEntries([...run.variables].map(([name, s]) => [name, variableView(run, name, s)])),
      calls: Object.fromEntries(
        run.program.dag.order.map((id) => {
          const d = run.objectiveOf(id);
          return [
            id,
            { function: run.program.calls.find((c) => c.id === id)!.fn.name, state: run.calls.get(id), objective: d.objective, ...(d.group !== undefined ? { group: d.group } : {}), engine: run.placedOn.get(id) ?? null, usage: run.usage.get(id) ?? null },
          ];
        }),
      ),
    });
  });

  app.get("/v1/apps/:ns/:app/programs/:id/events", async (req: Request, res: Response) => {
    const { run } = await replicaOf(req, res);
    // Event ids are indexes: anything but one (a negative number, a fraction, text) replays from the start.
    const lastId = Number(req.get("Last-Event-ID") ?? -1);
    startEventStream(res);
    let sent = Number.isInteger(lastId) && lastId >= -1 ? lastId + 1 : 0;
    const flush = (): void => {
      for (; sent < run.events.length; sent++) writeEvent(res, sent, run.events[sent]!);
      if (run.events.at(-1)?.type === "done") {
        stop();
        res.end();
      }
    };
    const stop = run.subscribe(() => flush());
    res.on("close", stop);
    flush();
  });

  app.get("/v1/apps/:ns/:app/variables/:id", async (req: Request, res: Response) => {
    const id = param(req, "id");
    const dot = id.lastIndexOf(".");
    if (dot <= 0) throw notFound(`no variable "${id}" (variable ids are <program id>.<variable name>)`);
    const replica = await replicaOf(req, res, id.slice(0, dot));
    const run = replica.run;
    const name = id.slice(dot + 1);
    if (!run.variables.has(name)) throw notFound(`program ${run.id} has no variable "${name}"`);
    const criteria = req.query["criteria"];
    const produced = run.program.dag.producer.has(name);
    if (criteria !== undefined) {
      if (criteria !== "latency" && criteria !== "throughput") throw badRequest(`criteria must be "latency" or "throughput", got ${JSON.stringify(criteria)}`);
      if (!produced) throw badRequest(`variable "${name}" is a program input; criteria apply to produced variables`);
    }
    const rawTimeout = req.query["timeoutMs"];
    const timeoutMs = rawTimeout === undefined ? 30_000 : Number(rawTimeout);
    if (!Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_POLL_MS) throw badRequest(`timeoutMs must be an integer in 0..${MAX_POLL_MS}, got ${JSON.stringify(rawTimeout)}`);
    // Parrot's get(perf=…): the criterion makes the variable a final output; in an open program the get is what starts its calls.
    // Stored as a mutation of the program, so the replica running it applies it wherever the get arrived.
    const criterion = criteria ?? (produced && run.program.open && !run.program.finals.has(name) ? run.config.objective : undefined);
    if (criterion !== undefined && run.program.finals.get(name) !== criterion && !run.done) await ctx.store.mutate(replica, { kind: "criterion", variable: name, criterion });
    const answer = (): boolean => {
      const s = run.variables.get(name)!;
      if (s.state === "pending") return false;
      res.status(200).json(variableView(run, name, s));
      return true;
    };
    if (answer()) return;
    const timer = setTimeout(() => {
      stop();
      res.status(202).json(variableView(run, name, { state: "pending" }));
    }, timeoutMs);
    const stop = run.subscribe((e) => {
      if ((e.type === "value" || e.type === "failed") && e.variable === name) {
        clearTimeout(timer);
        stop();
        answer();
      }
    });
    res.on("close", () => {
      clearTimeout(timer);
      stop();
    });
  });
}
