/**
 * The repository stands alone: its code and docs cite only what it holds. No file names a document
 * outside the repository or a numbered section of one, and every relative markdown link in the
 * docs and the README reaches an existing file and, with an anchor into a markdown file, an
 * existing heading. Reads files from disk only.
 */
import { describe, expect, test } from 'bun:test';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dir, '..', '..');
const THIS_FILE = relative(ROOT, import.meta.path);
const SCANNED = ['src', 'docs', 'test', 'scripts', 'bench', 'deploy', 'README.md'];

/** Every file under `path` (relative to the root), skipping hidden folders and node_modules. */
function filesUnder(path: string): string[] {
  const full = join(ROOT, path);
  if (!existsSync(full)) return [];
  if (!statSync(full).isDirectory()) return [path];
  return readdirSync(full)
    .filter((name) => !name.startsWith('.') && name !== 'node_modules')
    .flatMap((name) => filesUnder(join(path, name)));
}

/** The file's text, or null for a binary file (one with a NUL byte). */
function textOf(path: string): string | null {
  const bytes = readFileSync(join(ROOT, path));
  return bytes.includes(0) ? null : bytes.toString('utf8');
}

const TEXT_FILES = SCANNED.flatMap(filesUnder)
  .filter((path) => path !== THIS_FILE)
  .map((path) => ({ path, text: textOf(path) }))
  .filter((file): file is { path: string; text: string } => file.text !== null);

/** Where `pattern` occurs, as `path:line: text`. */
function occurrences(pattern: RegExp): string[] {
  return TEXT_FILES.flatMap(({ path, text }) =>
    text.split('\n').flatMap((line, index) => (pattern.test(line) ? [`${path}:${index + 1}: ${line.trim()}`] : [])),
  );
}

describe('no reference leaves the repository', () => {
  test('the scan sees the code and the docs', () => {
    const paths = TEXT_FILES.map((file) => file.path);
    expect(paths).toContain('README.md');
    expect(paths).toContain(join('docs', 'api.md'));
    expect(paths).toContain(join('src', 'app.ts'));
  });

  for (const [name, pattern] of [
    ['shared/', /shared\//],
    ['spec/api.md', /spec\/api\.md/],
    ['facts.md', /facts\.md/i],
    ['DESIGN.md', /DESIGN\.md/i],
    ['CONVENTIONS.md', /CONVENTIONS\.md/i],
  ] as const) {
    test(`no file mentions ${name}`, () => {
      expect(occurrences(pattern)).toEqual([]);
    });
  }

  test('no file cites a numbered section of api.md (docs/api.md has none: cite its headings)', () => {
    expect(occurrences(/api\.md,?\s+(?:§\s*|section\s+)?\d/i)).toEqual([]);
  });
});

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` removed, spaces to `-`. */
function githubAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/ /g, '-');
}

/** Fenced code blocks and inline code spans blanked out, so that neither their `#` lines nor their brackets count. */
function withoutCode(markdown: string): string {
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/`[^`\n]*`/g, (span) => ' '.repeat(span.length));
}

/** The anchors of a markdown file's headings, with GitHub's `-1`, `-2` suffixes for repeats. */
function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const source = readFileSync(join(ROOT, path), 'utf8');
  const headings = withoutCode(source)
    .split('\n')
    .flatMap((line, index) => {
      if (!/^#{1,6}\s/.test(line)) return [];
      // The heading's own text (code spans included: GitHub keeps their words).
      return [
        source
          .split('\n')
          [index]!.replace(/^#{1,6}\s+/, '')
          .replace(/\s+#+\s*$/, ''),
      ];
    });
  for (const heading of headings) {
    const base = githubAnchor(heading.replace(/[`*]/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'));
    const count = seen.get(base) ?? 0;
    anchors.add(count === 0 ? base : `${base}-${count}`);
    seen.set(base, count + 1);
  }
  return anchors;
}

const MARKDOWN_FILES = [
  'README.md',
  ...filesUnder('docs').filter((path) => dirname(path) === 'docs' && path.endsWith('.md')),
];

/** Every link of a markdown file whose target is in the repository: `[text](target)` or `![alt](target)`, not a URL. */
function localLinks(path: string): string[] {
  const text = withoutCode(readFileSync(join(ROOT, path), 'utf8'));
  return [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .map((match) => match[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** Why a link does not resolve, or null when it does. */
function brokenLink(from: string, target: string): string | null {
  const [file = '', anchor] = target.split('#', 2);
  const targetPath = file === '' ? from : relative(ROOT, resolve(ROOT, dirname(from), decodeURIComponent(file)));
  if (targetPath.startsWith('..')) return `${from}: ${target} leaves the repository`;
  if (!existsSync(join(ROOT, targetPath))) return `${from}: ${target}: no file ${targetPath}`;
  if (anchor === undefined || anchor === '' || !targetPath.endsWith('.md')) return null;
  return anchorsOf(targetPath).has(decodeURIComponent(anchor))
    ? null
    : `${from}: ${target}: no heading #${anchor} in ${targetPath}`;
}

describe('markdown links resolve inside the repository', () => {
  test('GitHub anchors, as the links expect them', () => {
    expect(githubAnchor('Payments, wallets and reversals (money out)')).toBe(
      'payments-wallets-and-reversals-money-out',
    );
    expect(githubAnchor("Reconciling with an operator's statement")).toBe('reconciling-with-an-operators-statement');
    expect(githubAnchor('The callback routes: throttle and malformed bodies')).toBe(
      'the-callback-routes-throttle-and-malformed-bodies',
    );
  });

  test('the docs and the README have links to check', () => {
    expect(MARKDOWN_FILES).toContain(join('docs', 'api.md'));
    expect(MARKDOWN_FILES.flatMap(localLinks).length).toBeGreaterThan(20);
  });

  for (const path of MARKDOWN_FILES) {
    test(`every repository link of ${path} reaches its file and heading`, () => {
      const broken = localLinks(path)
        .map((target) => brokenLink(path, target))
        .filter((problem) => problem !== null);
      expect(broken).toEqual([]);
    });
  }
});
