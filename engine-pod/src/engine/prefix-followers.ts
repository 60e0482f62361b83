/**
 * @module Admissions that follow another session's prefill. A router sends
 * an app's sessions to the engine that advertises its prefix, and it does so
 * from the first session's admission on, before that session has prefilled
 * the prefix. A second session admitted meanwhile would prefill the same
 * tokens beside the first, in the same batches, on the same engine thread.
 * Instead it waits until the first session's cells hold the shared tokens and
 * then copies them (a fork): both sessions see their first token no later,
 * and the prefix is evaluated once. The same holds for a prefix warm
 * filling a prefix-store sequence (a router warming an engine that just
 * joined, whose first sessions arrive during the warm): an admission
 * waits for the warm and forks from the store.
 */
import type { Token } from "node-llama-cpp";
import type { SessionState } from "./session-state.js";

/** A prefix warm filling a store sequence now: admissions may fork from it once `done` resolves. */
export interface StoreFill {
  /** The store sequence's id (after the session slots). */
  readonly sequence: number;
  readonly tokens: readonly Token[];
  readonly hashes: readonly string[];
  /** Resolves once the fill has ended, whether it stored the prefix or failed. */
  readonly done: Promise<void>;
}

/** A live session that has not decoded yet: its prompt is still going into its cells. */
export function isPrefilling(s: SessionState): boolean {
  return s.state !== "done" && !s.cancelRequested && s.slot >= 0 && s.usage.decodedTokens === 0;
}

interface Follow {
  readonly follower: SessionState;
  readonly source: SessionState;
  readonly tokens: number;
  readonly resolve: (source: SessionState) => void;
}

export class PrefixFollowers {
  private follows: Follow[] = [];
  /** Admissions that waited for a prefill and then forked from it, so far. */
  waits = 0;

  /**
   * Resolves, with the source, once `source` holds its first `tokens` prompt
   * tokens, or will not fill them any more (it decoded, ended, was cancelled
   * or lost its slot), or the follower was cancelled. The caller forks from
   * the source's sequence as it is then; a copy takes only the tokens it has.
   */
  follow(follower: SessionState, source: SessionState, tokens: number): Promise<SessionState> {
    this.waits++;
    return new Promise((resolve) => {
      this.follows.push({ follower, source, tokens, resolve });
      this.settle();
    });
  }

  /** Resolves when a prefix warm's fill of a store sequence has ended (stored, or failed and emptied). */
  followStoreFill(done: Promise<void>): Promise<void> {
    this.waits++;
    return done;
  }

  /** Releases the follows whose wait is over; called by the loop every step. */
  settle(): void {
    if (this.follows.length === 0) return;
    const open: Follow[] = [];
    for (const f of this.follows) {
      const over = f.follower.cancelRequested || !isPrefilling(f.source) || f.source.tokens.context.length >= f.tokens;
      if (over) f.resolve(f.source);
      else open.push(f);
    }
    this.follows = open;
  }
}
