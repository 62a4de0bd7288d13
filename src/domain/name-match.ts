import { distance } from 'fastest-levenshtein';

/** Lower case, letters and digits only, words in alphabetical order: "DOE, Jane" ≈ "jane doe". */
function normalize(name: string, sortWords: boolean): string {
  const words = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
  return (sortWords ? words.sort() : words).join(' ');
}

/**
 * How well a contact's name matches the name the network holds, 0 to 100: Levenshtein similarity
 * of the normalised names, in the given word order or sorted, whichever is higher.
 */
export function nameMatchScore(contactName: string, networkName: string): number {
  let best = 0;
  for (const sorted of [false, true]) {
    const a = normalize(contactName, sorted);
    const b = normalize(networkName, sorted);
    const longest = Math.max(a.length, b.length);
    if (longest === 0) continue;
    best = Math.max(best, 1 - distance(a, b) / longest);
  }
  return Math.round(best * 100);
}
