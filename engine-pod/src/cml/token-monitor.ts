/**
 * @module The incremental CML token monitor: a finite-state machine over
 * sampled tokens that recognises `[CALL] body [END]`, `[CALL] id [HEAD] body
 * [END]` and `[TRAP] [END]`, whether the markers arrive as single control
 * tokens or as plain text split across several tokens.
 */
import { CML, CML_MARKERS, type CmlMarker } from "../../../common/src/index.js";
import type { MonitorEvent, MonitorOptions, TokenMonitor } from "./monitor-api.js";

/** Where the machine is. `intr` swallows a model-forged `[INTR] ... [END]`. */
type State = "outside" | "call" | "trap" | "intr";

/** Longest marker length: held-back text is never longer than this minus one. */
const MAX_MARKER_LEN = Math.max(...CML_MARKERS.map((m) => m.length));

/**
 * Length of the longest suffix of `s` that is a proper prefix of some marker
 * (text that may still become a marker once more tokens arrive).
 */
function heldSuffixLength(s: string): number {
  const from = Math.max(0, s.length - (MAX_MARKER_LEN - 1));
  for (let i = from; i < s.length; i++) {
    if (s.charCodeAt(i) !== 0x5b /* [ */) continue;
    const tail = s.slice(i);
    if (CML_MARKERS.some((m) => m.length > tail.length && m.startsWith(tail))) return s.length - i;
  }
  return 0;
}

/** First complete text marker in `s`, if any. */
function findMarker(s: string): { index: number; marker: CmlMarker } | undefined {
  let best: { index: number; marker: CmlMarker } | undefined;
  for (const marker of CML_MARKERS) {
    const index = s.indexOf(marker);
    if (index >= 0 && (best === undefined || index < best.index)) best = { index, marker };
  }
  return best;
}

class CmlTokenMonitor implements TokenMonitor {
  private state: State = "outside";
  /** Text that may be the start of a split marker (text-marker mode only). */
  private pending = "";
  /** Content of the open block (id, then body after `[HEAD]`). */
  private content = "";
  private id: string | undefined;
  /** The open block's text as generated, markers included (for `malformed.raw`). */
  private raw = "";
  /** Set when the open call block broke the grammar; reported at its `[END]`. */
  private problem: string | undefined;
  private events: MonitorEvent[] = [];
  private readonly markerTokens: ReadonlyMap<number, CmlMarker>;
  private readonly textMarkers: boolean;
  private readonly streamBody: boolean;
  /** `streamCallBody`: the open call's body has begun (its text is being reported). */
  private bodyOpen = false;

  constructor(options: MonitorOptions) {
    this.markerTokens = options.markerTokens ?? new Map();
    this.textMarkers = options.textMarkers ?? this.markerTokens.size === 0;
    this.streamBody = options.streamCallBody ?? false;
  }

  get inCriticalSection(): boolean {
    return this.state === "call" || this.state === "trap";
  }

  get safeToInject(): boolean {
    return this.state === "outside" && this.pending === "";
  }

  get heldText(): string {
    return this.pending;
  }

  push(token: number, text: string): MonitorEvent[] {
    this.events = [];
    const marker = this.markerTokens.get(token);
    if (marker !== undefined) {
      // A control token ends any partial text marker: what was held is content,
      // and so is text the detokenizer released with the marker (the end of a
      // character it was holding).
      this.release(this.pending + (text.endsWith(marker) ? text.slice(0, text.length - marker.length) : ""));
      this.pending = "";
      this.onMarker(marker);
    } else if (this.textMarkers) {
      this.scan(text);
    } else {
      this.release(text);
    }
    return this.events;
  }

  flush(): MonitorEvent[] {
    this.events = [];
    this.release(this.pending);
    this.pending = "";
    if (this.state !== "outside") {
      const what = this.state === "intr" ? "model-emitted [INTR] block" : `unterminated ${this.state === "call" ? CML.CALL : CML.TRAP} block`;
      this.malformed(`${what} at end of stream`);
    }
    return this.events;
  }

  /** Text-marker mode: find whole markers, hold back what may start one. */
  private scan(text: string): void {
    let s = this.pending + text;
    for (;;) {
      const found = findMarker(s);
      if (found === undefined) break;
      this.release(s.slice(0, found.index));
      s = s.slice(found.index + found.marker.length);
      this.onMarker(found.marker);
    }
    const held = heldSuffixLength(s);
    this.release(s.slice(0, s.length - held));
    this.pending = s.slice(s.length - held);
  }

  /** Text that is certainly not part of a marker goes to the current state. */
  private release(text: string): void {
    if (text === "") return;
    if (this.state === "outside") {
      const last = this.events[this.events.length - 1];
      if (last?.type === "text") last.text += text;
      else this.events.push({ type: "text", text });
      return;
    }
    this.raw += text;
    this.content += text;
    if (!this.streamBody || this.state !== "call") return;
    if (this.bodyOpen) this.events.push({ type: "call_text", text });
    else if (this.id === undefined && /[{(]/.test(this.content)) {
      // No id: a JSON or Python call begins here (an id cannot hold these characters).
      this.bodyOpen = true;
      this.events.push({ type: "call_body" }, { type: "call_text", text: this.content.trimStart() });
    }
  }

  private onMarker(marker: CmlMarker): void {
    switch (this.state) {
      case "outside":
        return this.markerOutside(marker);
      case "call":
        return this.markerInCall(marker);
      case "trap":
        return this.markerInTrap(marker);
      case "intr":
        if (marker === CML.HEAD) {
          this.raw += marker;
          return;
        }
        if (marker === CML.END) {
          this.raw += marker;
          return this.malformed("model-emitted [INTR] block (only the engine injects interrupts)");
        }
        this.malformed("model-emitted [INTR] block (only the engine injects interrupts)");
        return this.markerOutside(marker);
    }
  }

  private markerOutside(marker: CmlMarker): void {
    switch (marker) {
      case CML.CALL:
        this.open("call", marker);
        this.events.push({ type: "call_start" });
        return;
      case CML.TRAP:
        this.open("trap", marker);
        return;
      case CML.INTR:
        this.open("intr", marker);
        return;
      case CML.END:
      case CML.HEAD:
        this.events.push({ type: "malformed", reason: `${marker} outside a block`, raw: marker });
        return;
    }
  }

  private markerInCall(marker: CmlMarker): void {
    switch (marker) {
      case CML.HEAD: {
        this.raw += marker;
        const id = this.content.trim();
        if (this.id !== undefined) this.problem ??= "second [HEAD] in a call block";
        else if (id === "") this.problem ??= "empty call id before [HEAD]";
        else if (this.bodyOpen) this.problem ??= "[HEAD] after the call body began";
        else this.id = id;
        this.content = "";
        if (this.streamBody && !this.bodyOpen && this.id !== undefined) {
          this.bodyOpen = true;
          this.events.push({ type: "call_body", id: this.id });
        }
        return;
      }
      case CML.END: {
        this.raw += marker;
        if (this.problem !== undefined) return this.malformed(this.problem);
        const event: MonitorEvent = this.id === undefined
          ? { type: "call", body: this.content }
          : { type: "call", id: this.id, body: this.content };
        this.reset();
        this.events.push(event);
        return;
      }
      case CML.CALL:
      case CML.TRAP:
      case CML.INTR:
        // The open block can never be completed: report it, then start over.
        this.malformed(`${marker} inside an open ${CML.CALL} block`);
        return this.markerOutside(marker);
    }
  }

  private markerInTrap(marker: CmlMarker): void {
    if (marker === CML.END) {
      // Lenient: stray text between [TRAP] and [END] is dropped, the trap stands.
      this.reset();
      this.events.push({ type: "trap" });
      return;
    }
    this.malformed(`${marker} inside an open ${CML.TRAP} block`);
    if (marker !== CML.HEAD) this.markerOutside(marker);
  }

  private open(state: State, marker: CmlMarker): void {
    this.state = state;
    this.raw = marker;
    this.content = "";
    this.id = undefined;
    this.problem = undefined;
  }

  private malformed(reason: string): void {
    const raw = this.raw;
    this.reset();
    this.events.push({ type: "malformed", reason, raw });
  }

  private reset(): void {
    this.state = "outside";
    this.raw = "";
    this.content = "";
    this.id = undefined;
    this.problem = undefined;
    this.bodyOpen = false;
  }
}

/**
 * A fresh monitor for one sequence. With `markerTokens`, only those control
 * tokens are markers (marker-looking plain text stays text, so it cannot be
 * forged); without them, markers are recognised in the text stream.
 */
export function createTokenMonitor(options: MonitorOptions = {}): TokenMonitor {
  return new CmlTokenMonitor(options);
}
