/**
 * @module The validation pass over a fine-tuning sample: its assistant turn
 * is replayed as the engine would see it. Interrupt blocks are the engine's
 * (cut out and checked apart); everything else is the model's and goes
 * through the CML token monitor in small pieces, so markers arrive split
 * across "tokens" as they do from a text-marker model. A sample is valid when
 * the monitor reports no malformed block, every call body parses against the
 * sample's tools, every DAG call is made exactly once and only after the
 * successful results it depends on, a call made again follows its failed
 * result, every interrupt answers a call made before it and arrives outside
 * any critical section, and every trap waits on a pending call.
 */
import { CML, type ToolSpec } from "../../common/src/index.js";
import { createTokenMonitor, parseCallBody } from "../../engine-pod/src/cml/index.js";
import type { SimulatedCall } from "./simulate.js";

/** What validation reads of a sample. */
export interface CheckedSample {
  messages: { role: "system" | "user" | "assistant"; content: string }[];
  tools: ToolSpec[];
  dag: SimulatedCall[];
}

const esc = (m: string): string => m.replace(/[[\]]/g, "\\$&");
const INTR_BLOCK = new RegExp(`${esc(CML.INTR)}([A-Za-z_][A-Za-z0-9_]*)${esc(CML.HEAD)}([\\s\\S]*?)${esc(CML.END)}`, "g");

/** Problems found in `sample`; empty when it is valid. `pieceChars` sizes the monitor's simulated tokens. */
export function validateSample(sample: CheckedSample, pieceChars = 3): string[] {
  const problems: string[] = [];
  const assistant = sample.messages.filter((m) => m.role === "assistant");
  if (assistant.length !== 1) return [`expected one assistant turn, found ${assistant.length}`];
  const text = assistant[0]!.content;
  const byId = new Map(sample.dag.map((c) => [c.id, c]));
  const monitor = createTokenMonitor();
  const made = new Set<string>();
  const answered = new Set<string>();
  const failed = new Set<string>();
  const succeeded = new Set<string>();
  const feed = (model: string): void => {
    for (let i = 0; i < model.length; i += pieceChars) {
      for (const ev of monitor.push(-1, model.slice(i, i + pieceChars))) {
        if (ev.type === "malformed") problems.push(`malformed CML: ${ev.reason}`);
        if (ev.type === "trap" && ![...made].some((id) => !answered.has(id))) problems.push("a trap with no call pending");
        if (ev.type !== "call") continue;
        const id = ev.id ?? "";
        const planned = byId.get(id);
        if (planned === undefined) {
          problems.push(`call ${id} is not in the DAG`);
          continue;
        }
        if (made.has(id)) problems.push(`call ${id} made twice`);
        made.add(id);
        for (const dep of planned.dependsOn) if (!succeeded.has(dep)) problems.push(`call ${id} made before the result of ${dep}`);
        if (planned.retryOf !== undefined && !failed.has(planned.retryOf)) problems.push(`call ${id} retries ${planned.retryOf} before its failure arrived`);
        const parsed = parseCallBody(ev.body, sample.tools);
        if (!parsed.ok) problems.push(`call ${id}: ${parsed.message}`);
        else if (parsed.tool !== planned.tool || JSON.stringify(parsed.arguments) !== JSON.stringify(planned.arguments)) problems.push(`call ${id} differs from the DAG`);
      }
    }
  };
  let last = 0;
  for (const m of text.matchAll(INTR_BLOCK)) {
    feed(text.slice(last, m.index));
    const id = m[1]!;
    if (!monitor.safeToInject) problems.push(`interrupt ${id} inside a critical section`);
    if (!made.has(id)) problems.push(`interrupt ${id} before its call`);
    if (answered.has(id)) problems.push(`interrupt ${id} delivered twice`);
    answered.add(id);
    if (m[2]!.startsWith("error:")) failed.add(id);
    else {
      succeeded.add(id);
      const retryOf = byId.get(id)?.retryOf;
      if (retryOf !== undefined) succeeded.add(retryOf);
    }
    last = m.index + m[0].length;
  }
  feed(text.slice(last));
  for (const ev of monitor.flush()) if (ev.type === "malformed") problems.push(`malformed CML at the end: ${ev.reason}`);
  for (const c of sample.dag) {
    if (!made.has(c.id)) problems.push(`call ${c.id} never made`);
    else if (!answered.has(c.id)) problems.push(`call ${c.id} never answered`);
    else if (c.retryOf === undefined && !succeeded.has(c.id)) problems.push(`call ${c.id} never succeeded`);
  }
  return problems;
}
