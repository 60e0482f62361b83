/**
 * @module Marker tokens of a loaded model and the token bias that keeps the
 * model from emitting `[INTR]`. Generated (and CML-fine-tuned) models have
 * the five markers as single control tokens; other models spell them as text
 * split across several tokens.
 */
import type { LlamaModel, Token } from "node-llama-cpp";
import { TokenBias } from "node-llama-cpp";
import { CML, CML_MARKERS, type CmlMarker } from "../../../common/src/index.js";

/** The logit given to `[INTR]` in every decode step: low enough to never win, finite so a grammar cannot wedge the sampler (docs/engine-facts.md). */
export const INTR_LOGIT = -100;

/** How the model represents the markers. */
export interface MarkerTokenInfo {
  /** Markers that are one token when special tokens are parsed (id → marker); pass to the monitor and the grammar. */
  markerTokens: Map<number, CmlMarker>;
  /** Markers plain text can also produce as that single token (user-defined, not control): user text could forge them, so escape it. */
  forgeable: CmlMarker[];
  /** Markers the model only has as text (several tokens): the monitor must run in text-marker mode for these. */
  textOnly: CmlMarker[];
}

/** Finds which CML markers `model` has as single tokens, and whether plain text can produce them. */
export function findMarkerTokens(model: LlamaModel): MarkerTokenInfo {
  const info: MarkerTokenInfo = { markerTokens: new Map(), forgeable: [], textOnly: [] };
  for (const marker of CML_MARKERS) {
    const special = model.tokenize(marker, true);
    const id = special[0];
    if (special.length !== 1 || id === undefined) {
      info.textOnly.push(marker);
      continue;
    }
    info.markerTokens.set(id, marker);
    const plain = model.tokenize(marker, false);
    if (plain.length === 1 && plain[0] === id) info.forgeable.push(marker);
  }
  return info;
}

/** The `[INTR]` token id, if the model has one. */
export function intrTokenId(markerTokens: ReadonlyMap<number, CmlMarker>): Token | undefined {
  for (const [id, m] of markerTokens) if (m === CML.INTR) return id as Token;
  return undefined;
}

/**
 * The bias to apply in every decode step so the model never emits `[INTR]`
 * (only the engine injects interrupts): `{ [intrId]: INTR_LOGIT }`, empty when
 * the model has no `[INTR]` token. For text-marker models no single token can
 * be banned without banning ordinary text ("[", "INT"); there the monitor
 * reports a spelled-out `[INTR]` as `malformed` and the engine can stop or
 * roll the sequence back.
 */
export function intrLogitBias(markerTokens: ReadonlyMap<number, CmlMarker>): Map<Token, number> {
  const id = intrTokenId(markerTokens);
  return id === undefined ? new Map() : new Map([[id, INTR_LOGIT]]);
}

/** A node-llama-cpp `TokenBias` with {@link intrLogitBias} applied (a numeric logit, never `"never"`). */
export function createIntrTokenBias(model: LlamaModel, markerTokens: ReadonlyMap<number, CmlMarker>): TokenBias {
  const bias = new TokenBias(model.tokenizer);
  for (const [id, logit] of intrLogitBias(markerTokens)) bias.set(id, { logit });
  return bias;
}
