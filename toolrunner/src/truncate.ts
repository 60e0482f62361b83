/**
 * @module The result size cap: outputs longer than the cap (UTF-8 bytes) are
 * cut at a character boundary and end with a marker that tells the model so.
 */

/** Cuts `text` to at most `maxBytes` UTF-8 bytes plus a marker; `truncated` says whether it did. */
export function truncateOutput(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= maxBytes) return { text, truncated: false };
  const buf = Buffer.from(text, "utf8");
  let end = maxBytes;
  // Step back over UTF-8 continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return { text: `${buf.subarray(0, end).toString("utf8")}\n[truncated: ${bytes} bytes, cap ${maxBytes}]`, truncated: true };
}
