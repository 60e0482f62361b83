/**
 * @module Where a program lives so that every router replica sees it: the
 * `interlace-programs` JetStream KV bucket. Design choice (issue 27, "one
 * truth for every replica"): shared state in JetStream, not owner routing.
 * One replica — the holder of the program's lease — runs the program (its
 * values flow inside that process, as before); everything a client can read
 * is written to the bucket as it happens, so any replica answers any read by
 * watching the program's keys, and a replica that finds a lease unrenewed
 * claims it and resumes the program from what the bucket holds.
 *
 * Keys of program `<id>` (ids are `prog_<24 hex>`, valid KV tokens):
 * - `<id>.spec`: what the client asked for — the app's config when it was
 *   submitted, the creating key's principal, and the ordered list of
 *   mutations (the create body, each `calls` body, each criterion a `get`
 *   set). Replaying them rebuilds the program. Appended with a revision
 *   compare-and-set, so mutations through two replicas never overwrite each
 *   other.
 * - `<id>.lease`: which router instance runs it; renewed every third of the
 *   lease with a revision compare-and-set, and claimed the same way, so two
 *   replicas never both hold it. `done` once the program has ended.
 * - `<id>.e.<n>`: the n-th event of its log (a `JournaledEvent`) (a produced or failed variable,
 *   then `done`), created with "create only if absent": a replica that lost
 *   its lease without noticing cannot write over the new owner's log.
 * - `<id>.cancel`: a cancellation asked for through any replica; the owner
 *   watches it and cancels.
 * Finished programs are purged `--program-keep-ms` after they ended; the
 * bucket's one-day TTL is only a backstop for keys nobody purged.
 */
import { randomBytes } from "node:crypto";
import { StorageType } from "@nats-io/jetstream";
import { Kvm, type KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { natsReplicas, parseAppConfig, type AppConfig } from "../../../common/src/protocol/index.js";
import type { Criterion } from "./dag.js";

export const PROGRAMS_BUCKET = "interlace-programs";
const BACKSTOP_TTL_MS = 86_400_000;

/** The KV bucket of programs (one per NATS account; created by whichever router starts first). */
export async function openProgramsBucket(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(PROGRAMS_BUCKET, { history: 1, ttl: BACKSTOP_TTL_MS, storage: StorageType.File, replicas: natsReplicas() });
}

const PROGRAM_ID = /^prog_[0-9a-f]{24}$/;

export function newProgramId(): string {
  return `prog_${randomBytes(12).toString("hex")}`;
}

export function isProgramId(id: string): boolean {
  return PROGRAM_ID.test(id);
}

export const programKeys = {
  all: (id: string) => `${id}.>`,
  spec: (id: string) => `${id}.spec`,
  lease: (id: string) => `${id}.lease`,
  cancel: (id: string) => `${id}.cancel`,
  event: (id: string, n: number) => `${id}.e.${n}`,
  /** Every program's lease (the takeover scan). */
  leases: "*.lease",
};

/** One change a client made to a program, in the order the replicas apply it. */
export type ProgramMutation = { kind: "create"; body: unknown } | { kind: "extend"; body: unknown } | { kind: "criterion"; variable: string; criterion: Criterion };

export interface ProgramSpec {
  id: string;
  /** The app's config when the program was submitted (later changes do not reach a running program). */
  config: AppConfig;
  /** The principal of the API key that created it. */
  principal: string;
  /** Epoch ms of the submission: event times count from it on every replica. */
  startedAt: number;
  mutations: ProgramMutation[];
}

export interface ProgramLease {
  /** The router instance (`<router id>/<random>`) running it; a restarted router is a new instance. */
  holder: string;
  /**
   * How long it lasts unrenewed: the holder's `--program-lease-ms` (replicas
   * may be configured differently; the holder's word counts). 0 once given up.
   */
  ms: number;
  /** The program ended: nobody needs to run it; purged after `finishedAt` + keep. */
  done: boolean;
  finishedAt?: number;
}

export interface CancelRequest {
  reason: string;
}

const MUTATION_KINDS = new Set(["create", "extend", "criterion"]);

/**
 * A program's spec as read from the bucket, checked before a replica builds
 * a run from it (any router identity may write the bucket; a malformed spec
 * answered 500 on every read of the program). Throws naming what is wrong.
 */
export function parseProgramSpec(data: unknown): ProgramSpec {
  if (data === null || typeof data !== "object" || Array.isArray(data)) throw new Error("the spec is not an object");
  const s = data as Record<string, unknown>;
  if (typeof s["id"] !== "string" || typeof s["principal"] !== "string") throw new Error("the spec's id and principal must be strings");
  if (typeof s["startedAt"] !== "number" || !Number.isFinite(s["startedAt"])) throw new Error("the spec's startedAt must be a number");
  const config = parseAppConfig(s["config"]);
  if (!config.ok) throw new Error(`the spec's config: ${config.reason}`);
  const mutations = s["mutations"];
  if (!Array.isArray(mutations) || mutations.some((m) => m === null || typeof m !== "object" || !MUTATION_KINDS.has((m as { kind?: unknown }).kind as string))) {
    throw new Error("the spec's mutations must be an array of {kind: create | extend | criterion}");
  }
  return data as ProgramSpec;
}

export function encode(value: unknown): string {
  return JSON.stringify(value);
}
