/**
 * @module A completion's `stop` sequences over its streamed text: text that
 * could still be the start of a stop sequence is held back, so a client never
 * sees part of one; once a sequence matches, the text ends before it and
 * everything after is dropped.
 */
export class StopSequences {
  private held = "";
  private stopped = false;

  constructor(private readonly sequences: readonly string[]) {}

  /** The text to pass on now, and whether a stop sequence has ended the text. */
  push(text: string): { emit: string; stopped: boolean } {
    if (this.stopped) return { emit: "", stopped: true };
    const buf = this.held + text;
    let cut = -1;
    for (const s of this.sequences) {
      const i = buf.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      this.held = "";
      this.stopped = true;
      return { emit: buf.slice(0, cut), stopped: true };
    }
    let keep = 0;
    for (const s of this.sequences) {
      for (let k = Math.min(s.length - 1, buf.length); k > keep; k--) {
        if (buf.endsWith(s.slice(0, k))) {
          keep = k;
          break;
        }
      }
    }
    this.held = buf.slice(buf.length - keep);
    return { emit: buf.slice(0, buf.length - keep), stopped: false };
  }

  /** The held-back text, once no stop sequence can complete it (a call block opens, the text ends). */
  flush(): string {
    const held = this.held;
    this.held = "";
    return held;
  }
}
