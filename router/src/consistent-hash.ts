/**
 * @module A consistent-hash ring over engine pods (virtual nodes), for
 * seeding affinity on a prefix miss: the same key walks the ring from the
 * same point, so later sessions of one app converge on the engine the first
 * one was placed on, and adding or removing an engine moves only its share
 * of keys.
 */
import { createHash } from "node:crypto";

const VIRTUAL_NODES = 64;

function point(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0);
}

export class HashRing {
  private readonly points: { at: number; node: string }[];

  constructor(nodes: readonly string[], virtualNodes = VIRTUAL_NODES) {
    this.points = nodes
      .flatMap((node) => Array.from({ length: virtualNodes }, (_, i) => ({ at: point(`${node}#${i}`), node })))
      .sort((a, b) => a.at - b.at || (a.node < b.node ? -1 : 1));
  }

  /** Every node once, in ring order from `key`'s position. */
  walk(key: string): string[] {
    const n = this.points.length;
    if (n === 0) return [];
    const at = point(key);
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.points[mid]!.at < at) lo = mid + 1;
      else hi = mid;
    }
    const order: string[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < n && seen.size < n; i++) {
      const node = this.points[(lo + i) % n]!.node;
      if (!seen.has(node)) (seen.add(node), order.push(node));
    }
    return order;
  }
}

/** Rings by node set (placement rebuilds nothing while the pool is unchanged). */
const rings = new Map<string, HashRing>();

export function ringFor(nodes: readonly string[]): HashRing {
  const key = [...nodes].sort().join("\u0000");
  let ring = rings.get(key);
  if (ring === undefined) {
    if (rings.size > 64) rings.clear();
    ring = new HashRing([...nodes].sort());
    rings.set(key, ring);
  }
  return ring;
}
