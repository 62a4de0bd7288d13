/**
 * JSON nesting checked without recursion: a body of 50,000 nested arrays must be refused quickly,
 * not overflow the stack of whatever walks it afterwards.
 */

/** Deeper JSON than this is refused before parsing: no field of the API nests more than a few levels. */
export const MAX_JSON_DEPTH = 32;

/** True when `text`, read as JSON, opens more than `maxDepth` arrays or objects at once (one linear scan). */
export function jsonDepthExceeds(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c)
        index += 1; // backslash: skip the escaped character
      else if (code === 0x22) inString = false;
      continue;
    }
    if (code === 0x22) inString = true;
    else if (code === 0x5b || code === 0x7b) {
      depth += 1;
      if (depth > maxDepth) return true;
    } else if (code === 0x5d || code === 0x7d) depth -= 1;
  }
  return false;
}

/** How deep a parsed value nests (a scalar is 0), walked with an explicit stack. */
export function valueDepth(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    const inner = depth + 1;
    if (inner > deepest) deepest = inner;
    for (const nested of Array.isArray(item) ? item : Object.values(item)) pending.push([nested, inner]);
  }
  return deepest;
}
