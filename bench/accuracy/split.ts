/**
 * @module The tuning / evaluation split of BFCL ids. Prompt choices (the
 * few-shot examples and the wording of the CML instructions) may be compared
 * only on the tuning split (`--split tuning`); the accuracy table is measured
 * on the evaluation split (the default). An id belongs to the tuning split
 * when the FNV-1a hash of its text is 0 mod 5 (about one entry in five), so
 * the split is fixed, needs no list, and holds for categories not in this
 * repository too.
 */
import { fnv1a32 } from "../../engine-pod/src/model/index.js";

export type Split = "tuning" | "eval" | "all";

export function isTuningId(id: string): boolean {
  return fnv1a32(id) % 5 === 0;
}

export function inSplit(id: string, split: Split): boolean {
  return split === "all" || (split === "tuning") === isTuningId(id);
}
