/** Reading Prometheus text-format scrapes in tests. */
export type Scrape = { text: string; value: (name: string, labels?: Record<string, string>) => number };

/** `name{a="1",b="2"} 3` lines as (name, labels, value); comments skipped. */
function samples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const result: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const pair of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[pair[1]!] = pair[2]!;
    result.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return result;
}

/** A scrape; `value` sums the samples of `name` whose labels include `labels` (0 when none). */
export function parseScrape(text: string): Scrape {
  const all = samples(text);
  return {
    text,
    value: (name, labels = {}) =>
      all
        .filter(
          (sample) =>
            sample.name === name && Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted),
        )
        .reduce((sum, sample) => sum + sample.value, 0),
  };
}
