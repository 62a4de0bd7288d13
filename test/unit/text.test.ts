import { expect, test } from 'bun:test';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

// Text in the code is written to be read: a sentence or a SQL clause is not cut where the line width happened to
// fall. A long text is built from whole sentences (an array joined with spaces), a statement is broken at its clauses.

const ROOT = resolve(import.meta.dir, '../..');

type SourceFile = { path: string; text: string };

function sourceFiles(folder: string): SourceFile[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [{ path: relative(ROOT, path), text: readFileSync(path, 'utf8') }] : [];
  });
}

const FILES = sourceFiles(join(ROOT, 'src'));

/** A string literal (quoted or a template) that goes on with `+` on the next line. */
const CUT_STRING = /['"`] \+\s*$/;

test('no line of src ends in a string continued with `+` on the next line (a text is written in whole sentences)', () => {
  const cut = FILES.flatMap((file) =>
    file.text.split('\n').flatMap((line, index) => (CUT_STRING.test(line) ? [`${file.path}:${index + 1}`] : [])),
  );
  expect(cut).toEqual([]);
});

/** A line of SQL that ends in a comparison operator (`=>` is JavaScript), or that begins with one. */
const ENDS_IN_OPERATOR = /(?:[<>!]?=|(?<!=)>|<)$/;
const BEGINS_WITH_OPERATOR = /^(?:[<>!]?=|<>|<|>)\s/;
/**
 * A line of SQL that ends in a word which needs what follows it (`set` alone on its line, one assignment a line
 * below it, is a clause boundary).
 */
const ENDS_IN_KEYWORD = /\b(?:and|or|where)$/i;

/**
 * Every SQL template of a file (every tagged template but the console's `html`), as the lines of its text that are
 * cut between an operator and its value, or after a keyword that needs the rest of its clause.
 */
function cutSqlLines(file: SourceFile): string[] {
  const source = ts.createSourceFile(file.path, file.text, ts.ScriptTarget.Latest, true);
  const found = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isTaggedTemplateExpression(node) && node.tag.getText(source) !== 'html') {
      const first = source.getLineAndCharacterOfPosition(node.template.getStart(source)).line;
      node.template
        .getText(source)
        .split('\n')
        .forEach((raw, index) => {
          const line = raw
            .replace(/\s*--.*$/, '')
            .replace(/^`|`$/g, '')
            .trim();
          if (ENDS_IN_OPERATOR.test(line) || ENDS_IN_KEYWORD.test(line) || BEGINS_WITH_OPERATOR.test(line))
            found.add(`${file.path}:${first + index + 1}`);
        });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...found];
}

test('SQL is broken at its clauses: no line of a statement ends in a comparison operator, `and`, `or`, `set` or `where`, or begins with an operator', () => {
  expect(FILES.flatMap(cutSqlLines)).toEqual([]);
});
