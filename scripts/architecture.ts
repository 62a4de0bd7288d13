/**
 * The shape of src/ as rules a reviewer would check by hand: the import graph (type-only imports
 * included) has no circle and no import up a layer but the few `UPWARD` names, the API and the console do not import
 * each other, SQL is written only in services/ and db/, no function has more than 80 lines of code
 * of its own (nested functions, blank and comment lines not counted), none in network/ and services/
 * more than 80 counting its nested functions, and nothing is exported that
 * no other file names, and every file path the code cites is a file of the repository. `bun scripts/architecture.ts` prints the layers, the imports between them and every breach;
 * test/unit/architecture.test.ts asserts none.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export const SRC = resolve(import.meta.dir, '../src');
const ROOT = resolve(SRC, '..');
/** Where an export may be used: the code, its tests, the scripts and the benchmarks. */
const USERS = ['src', 'test', 'scripts', 'bench'].map((folder) => join(ROOT, folder));
export const MAX_OWN_LINES = 80;

/**
 * The layers, lowest first: a module may import its own layer and the ones below it at run time.
 * The entry points (processes and the CLI) sit on top.
 */
export const LAYERS: readonly { name: string; members: readonly string[] }[] = [
  // Text and format utilities (CSV, JSON, dates, URLs): no idea of the business's.
  { name: 'formats', members: ['formats/'] },
  { name: 'domain', members: ['domain/', 'config-values.ts', 'config.ts'] },
  // Workflow contracts (ids, inputs, signals, queries): pure, shared by workflow code and its clients, below both.
  { name: 'contracts', members: ['contracts/'] },
  { name: 'platform', members: ['telemetry/trace-context.ts', 'log.ts', 'auth/', 'db/', 'telemetry/metrics.ts'] },
  { name: 'services', members: ['services/'] },
  // Outbound HTTP to merchants' endpoints (webhooks, verification, the console's test sends).
  { name: 'outbound', members: ['outbound/'] },
  { name: 'network', members: ['network/'] },
  { name: 'activities', members: ['activities/'] },
  { name: 'workflows', members: ['workflows/'] },
  { name: 'launcher', members: ['temporal/'] },
  { name: 'http', members: ['http/', 'telemetry/'] },
  { name: 'interfaces', members: ['api/', 'console/'] },
  { name: 'composition', members: ['app.ts'] },
  { name: 'entry points', members: ['server.ts', 'server.deno.ts', 'worker.ts', 'admin.ts', 'admin/'] },
];

/**
 * The imports allowed to go up a layer, each with its reason; no more than two may ever be named
 * (test/unit/architecture.test.ts). Any other import up a layer is a breach.
 */
export const UPWARD: readonly { from: string; to: string; reason: string }[] = [
  {
    from: 'config.ts',
    to: 'network/registry.ts',
    reason:
      "the configuration reads and checks every connector's settings, which each connector declares in its own folder",
  },
];

/** The layer a module sits on (the most specific member wins). */
export function layerOf(module: string): number {
  let best = { layer: -1, length: -1 };
  LAYERS.forEach((layer, index) => {
    for (const member of layer.members) {
      const matches = member.endsWith('/') ? module.startsWith(member) : module === member;
      if (matches && member.length > best.length) best = { layer: index, length: member.length };
    }
  });
  if (best.layer === -1) throw new Error(`src/${module} is on no layer: add it to LAYERS in scripts/architecture.ts`);
  return best.layer;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return /\.(ts|mjs)$/.test(name) ? [path] : [];
  });
}

const hasBody = (node: ts.Node): node is ts.FunctionLikeDeclaration & { body: ts.Node } =>
  ts.isFunctionLike(node) && (node as { body?: ts.Node }).body !== undefined;

/**
 * Functions with more than MAX_OWN_LINES lines of code of their own: the lines of nested functions
 * are theirs, and blank and comment-only lines count for nobody. As `file:line name (lines)`.
 */
function longFunctions(file: string, text: string): { own: string[]; whole: string[] } {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (position: number) => source.getLineAndCharacterOfPosition(position).line;
  const lines = text.split('\n');
  const isCode = (line: number) => {
    const trimmed = (lines[line] ?? '').trim();
    return trimmed !== '' && !trimmed.startsWith('//') && !trimmed.startsWith('/*') && !trimmed.startsWith('*');
  };
  const found: string[] = [];
  const wholeFound: string[] = [];
  // In the network and its services the rule counts the functions nested in a function too, so a
  // factory closure cannot hide a long body in its inner functions.
  const module = relative(SRC, file);
  const wholeCounted = module.startsWith('network/') || module.startsWith('services/');
  const visit = (node: ts.Node): void => {
    if (hasBody(node)) {
      const nested = new Set<number>();
      const inner = (child: ts.Node): void => {
        if (!hasBody(child)) {
          ts.forEachChild(child, inner);
          return;
        }
        for (let line = lineOf(child.getStart()); line <= lineOf(child.getEnd()); line += 1) nested.add(line);
      };
      ts.forEachChild(node.body, inner);
      let own = 0;
      for (let line = lineOf(node.getStart()); line <= lineOf(node.getEnd()); line += 1)
        if (!nested.has(line) && isCode(line)) own += 1;
      const parent = node.parent;
      const name =
        node.name?.getText() ??
        (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) ? parent.name.getText() : '(anonymous)');
      if (own > MAX_OWN_LINES)
        found.push(`${relative(SRC, file)}:${lineOf(node.getStart()) + 1} ${name} (${own} lines)`);
      let whole = 0;
      for (let line = lineOf(node.getStart()); line <= lineOf(node.getEnd()); line += 1) if (isCode(line)) whole += 1;
      if (whole > MAX_OWN_LINES && wholeCounted)
        wholeFound.push(`${relative(SRC, file)}:${lineOf(node.getStart()) + 1} ${name} (${whole} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { own: found, whole: wholeFound };
}

/** The names a module exports by declaration (`export function f`, `export const a, b`, `export type T`). */
function exportedNames(file: string, text: string): string[] {
  const names: string[] = [];
  ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true).forEachChild((node) => {
    if (
      !(
        ts.canHaveModifiers(node) &&
        ts.getModifiers(node)?.some((modifier) => modifier.kind === ts.SyntaxKind.ExportKeyword)
      )
    )
      return;
    if (ts.isVariableStatement(node))
      for (const declaration of node.declarationList.declarations) names.push(declaration.name.getText());
    else if ((node as { name?: ts.Node }).name) names.push((node as unknown as { name: ts.Node }).name.getText());
  });
  return names;
}

/** Exports no other file of the project names (by word): they should not be exported, or not exist. */
function deadExports(texts: Map<string, string>): string[] {
  const users = [...new Set(USERS.flatMap(sourceFiles))].map((file) => ({
    file,
    text: texts.get(file) ?? readFileSync(file, 'utf8'),
  }));
  const dead: string[] = [];
  for (const [file, text] of texts) {
    for (const name of exportedNames(file, text)) {
      const word = new RegExp(`\\b${name}\\b`);
      if (!users.some((user) => user.file !== file && word.test(user.text)))
        dead.push(`${relative(SRC, file)} ${name}`);
    }
  }
  return dead;
}

/**
 * The imports of a module, as src-relative module paths, type-only imports included: a module
 * cannot be read, compiled or moved without what it names, whether it names a value or a type.
 */
function moduleImports(file: string, text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(
    /^\s*(import|export)\s+(type\s+)?([^'";]*?\s+from\s+)?['"](\.{1,2}\/[^'"]+)['"]/gm,
  )) {
    const target = resolve(dirname(file), match[4]!);
    const candidates = [target, `${target}.ts`, join(target, 'index.ts')];
    const hit = candidates.find((candidate) => {
      try {
        return statSync(candidate).isFile();
      } catch {
        return false;
      }
    });
    if (hit?.startsWith(SRC) && !found.includes(relative(SRC, hit))) found.push(relative(SRC, hit));
  }
  return found;
}

export type Architecture = {
  modules: string[];
  imports: Map<string, string[]>;
  upward: { from: string; to: string }[];
  interfacesCrossed: { from: string; to: string }[];
  cycles: string[][];
  sqlOutside: string[];
  longFunctions: string[];
  deadExports: string[];
  /** `file: cited path` for each path a src file cites that no file of the repository answers. */
  unresolvedReferences: string[];
  /**
   * What a connector holds that is not translation: an import of services/ or db/ from an operator's folder
   * (src/network/<operator>/), or the database's handle (`sql`, `Queryable`) named there.
   */
  connectorBreaches: string[];
  /** The modules whose SQL writes `network_operations`: the core's journal alone. */
  journalWriters: string[];
  /** Functions of src/network and src/services over MAX_OWN_LINES lines counting their nested functions. */
  longWholeFunctions: string[];
  /** Files of src/network and src/services over MAX_FILE_LINES lines. */
  longFiles: string[];
};

/** The longest a file of src/network or src/services may be. */
export const MAX_FILE_LINES = 400;

/** An operator's folder: a folder below network/ (each connector's unit, ./network/registry.ts). */
const operatorFolder = (module: string) => /^network\/[\w-]+\//.test(module);

/** Where a connector's code names the database (an identifier `sql`, `Sql` or `Queryable`), as `file:line`. */
function databaseNamed(module: string, text: string): string[] {
  const source = ts.createSourceFile(module, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node) && ['sql', 'Sql', 'Queryable'].includes(node.text))
      found.push(`${module}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} names ${node.text}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const WRITES_JOURNAL = /\b(insert\s+into|update|delete\s+from)\s+network_operations\b/i;

export function readArchitecture(): Architecture {
  const files = sourceFiles(SRC);
  const imports = new Map<string, string[]>();
  const sqlOutside: string[] = [];
  const long: string[] = [];
  const longWhole: string[] = [];
  const texts = new Map<string, string>();
  const connectorBreaches: string[] = [];
  const journalWriters: string[] = [];
  const longFiles: string[] = [];
  for (const file of files) {
    const module = relative(SRC, file);
    const text = readFileSync(file, 'utf8');
    texts.set(file, text);
    const lengths = longFunctions(file, text);
    long.push(...lengths.own);
    longWhole.push(...lengths.whole);
    imports.set(module, moduleImports(file, text));
    if (operatorFolder(module)) {
      connectorBreaches.push(
        ...moduleImports(file, text)
          .filter((to) => to.startsWith('services/') || to.startsWith('db/'))
          .map((to) => `${module} imports ${to}`),
        ...databaseNamed(module, text),
      );
    }
    if (WRITES_JOURNAL.test(text)) journalWriters.push(module);
    const lineCount = text.split('\n').length;
    if ((module.startsWith('network/') || module.startsWith('services/')) && lineCount > MAX_FILE_LINES)
      longFiles.push(`${module} (${lineCount} lines)`);
    const sqlHome = module.startsWith('services/') || module.startsWith('db/');
    if (!sqlHome && /\b(sql|tx|savepoint)(<[^`]*>)?`/.test(text)) sqlOutside.push(module);
  }
  const upward: Architecture['upward'] = [];
  const interfacesCrossed: Architecture['interfacesCrossed'] = [];
  for (const [from, targets] of imports) {
    for (const to of targets) {
      if (layerOf(to) > layerOf(from) && !UPWARD.some((allowed) => allowed.from === from && allowed.to === to))
        upward.push({ from, to });
      const interfaceOf = (module: string) =>
        module.startsWith('api/') ? 'api' : module.startsWith('console/') ? 'console' : null;
      if (interfaceOf(from) !== null && interfaceOf(to) !== null && interfaceOf(from) !== interfaceOf(to))
        interfacesCrossed.push({ from, to });
    }
  }
  return {
    modules: [...imports.keys()].sort(),
    imports,
    upward,
    interfacesCrossed,
    cycles: findCycles(imports),
    sqlOutside: sqlOutside.sort(),
    longFunctions: long,
    longWholeFunctions: longWhole,
    deadExports: deadExports(texts),
    unresolvedReferences: unresolvedReferences(texts),
    connectorBreaches,
    journalWriters: journalWriters.sort(),
    longFiles: longFiles.sort(),
  };
}

/** A file path a comment or string cites: folders, a name and an extension (not part of a URL). */
const CITED_PATH = /(?<![\w./:@-])((?:[\w-]+\/|\.\.?\/)+[\w.-]+\.(?:ts|md|sql|mjs|json|ya?ml|html|css|txt))\b/g;

/**
 * Every file path a src file cites that resolves to no file of the repository (from the root, from
 * src/, or from the citing file's folder): the code cites only what the repository holds.
 */
function unresolvedReferences(texts: Map<string, string>): string[] {
  const breaches: string[] = [];
  for (const [file, text] of texts) {
    for (const match of text.matchAll(CITED_PATH)) {
      const cited = match[1]!;
      const candidates = [join(ROOT, cited), join(SRC, cited), join(dirname(file), cited)];
      const inside = candidates.filter((candidate) => !relative(ROOT, candidate).startsWith('..'));
      if (!inside.some((candidate) => existsSync(candidate))) breaches.push(`${relative(ROOT, file)}: ${cited}`);
    }
  }
  return [...new Set(breaches)].sort();
}

/** Every strongly connected set of two or more modules (Tarjan), each a circle of imports. */
function findCycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string) => {
    indices.set(node, index);
    lowest.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        visit(next);
        lowest.set(node, Math.min(lowest.get(node)!, lowest.get(next)!));
      } else if (onStack.has(next)) lowest.set(node, Math.min(lowest.get(node)!, indices.get(next)!));
    }
    if (lowest.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return cycles;
}

if (import.meta.main) {
  const architecture = readArchitecture();
  const between = new Map<string, number>();
  for (const [from, targets] of architecture.imports) {
    for (const to of targets) {
      const key = `${LAYERS[layerOf(from)]!.name} → ${LAYERS[layerOf(to)]!.name}`;
      if (layerOf(from) !== layerOf(to)) between.set(key, (between.get(key) ?? 0) + 1);
    }
  }
  const lines = [
    'layers, top first:',
    ...[...LAYERS].reverse().map((layer) => `  ${layer.name.padEnd(13)} ${layer.members.join(' ')}`),
    'imports between layers:',
    ...[...between].sort().map(([key, count]) => `  ${key}: ${count}`),
    `imports up a layer allowed (UPWARD): ${UPWARD.length}`,
    ...UPWARD.map(({ from, to, reason }) => `  ${from} → ${to}: ${reason}`),
    `other imports up a layer: ${architecture.upward.length}`,
    ...architecture.upward.map(({ from, to }) => `  ${from} → ${to}`),
    `imports between the API and the console: ${architecture.interfacesCrossed.length}`,
    ...architecture.interfacesCrossed.map(({ from, to }) => `  ${from} → ${to}`),
    `import circles: ${architecture.cycles.length}`,
    ...architecture.cycles.map((cycle) => `  ${cycle.join(' ↔ ')}`),
    `SQL outside services/ and db/: ${architecture.sqlOutside.length}`,
    ...architecture.sqlOutside.map((module) => `  ${module}`),
    `functions over ${MAX_OWN_LINES} lines of their own: ${architecture.longFunctions.length}`,
    ...architecture.longFunctions.map((where) => `  ${where}`),
    `exports no other file names: ${architecture.deadExports.length}`,
    ...architecture.deadExports.map((where) => `  ${where}`),
    `file references outside the repository: ${architecture.unresolvedReferences.length}`,
    ...architecture.unresolvedReferences.map((where) => `  ${where}`),
    `connectors reaching past translation (services/, db/, the database's handle): ${
      architecture.connectorBreaches.length
    }`,
    ...architecture.connectorBreaches.map((where) => `  ${where}`),
    `writers of network_operations: ${architecture.journalWriters.join(', ')}`,
    `functions of network/ and services/ over ${MAX_OWN_LINES} lines with their nested functions: ${architecture.longWholeFunctions.length}`,
    ...architecture.longWholeFunctions.map((where) => `  ${where}`),
    `files of network/ and services/ over ${MAX_FILE_LINES} lines: ${architecture.longFiles.length}`,
    ...architecture.longFiles.map((where) => `  ${where}`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
