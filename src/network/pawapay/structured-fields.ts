/**
 * RFC 8941 structured fields: the part RFC 9421 (HTTP Message Signatures) and RFC 9530 (`Content-Digest`) use in
 * pawaPay's signed callbacks (./signatures.ts): dictionaries, inner lists, parameters, strings, tokens, integers,
 * decimals, byte sequences, booleans.
 */

export type BareItem =
  | { type: 'string' | 'token'; value: string }
  | { type: 'integer' | 'decimal'; value: number }
  | { type: 'bytes'; value: Uint8Array }
  | { type: 'boolean'; value: boolean };
type Parameters = [string, BareItem][];
type Item = { kind: 'item'; item: BareItem; params: Parameters };
export type InnerList = { kind: 'list'; items: Item[]; params: Parameters };

export class FieldError extends Error {}

type Cursor = { text: string; at: number };
const peek = (cursor: Cursor): string => cursor.text[cursor.at] ?? '';
const skip = (cursor: Cursor, characters: string): void => {
  while (cursor.at < cursor.text.length && characters.includes(peek(cursor))) cursor.at += 1;
};
const consume = (cursor: Cursor, character: string): void => {
  if (peek(cursor) !== character) throw new FieldError(`expected "${character}" at ${cursor.at}`);
  cursor.at += 1;
};

function parseKey(cursor: Cursor): string {
  const match = /^[a-z*][a-z0-9_.*-]*/.exec(cursor.text.slice(cursor.at));
  if (match === null) throw new FieldError(`expected a key at ${cursor.at}`);
  cursor.at += match[0].length;
  return match[0];
}

function parseNumber(cursor: Cursor): BareItem {
  const match = /^-?\d+(\.\d+)?/.exec(cursor.text.slice(cursor.at));
  if (match === null) throw new FieldError(`expected a number at ${cursor.at}`);
  const [text, fraction] = [match[0], match[1]];
  const whole = text.replace(/^-/, '').split('.')[0]!;
  // Integers have at most 15 digits; decimals at most 12, then a point and 1 to 3 digits.
  if (fraction === undefined ? whole.length > 15 : whole.length > 12 || fraction.length > 4)
    throw new FieldError(`number too long at ${cursor.at}`);
  cursor.at += text.length;
  return { type: fraction === undefined ? 'integer' : 'decimal', value: Number(text) };
}

function parseString(cursor: Cursor): BareItem {
  consume(cursor, '"');
  let value = '';
  for (;;) {
    const character = peek(cursor);
    cursor.at += 1;
    if (character === '') throw new FieldError('unterminated string');
    if (character === '"') return { type: 'string', value };
    if (character === '\\') {
      const escaped = peek(cursor);
      if (escaped !== '"' && escaped !== '\\') throw new FieldError(`bad escape at ${cursor.at}`);
      value += escaped;
      cursor.at += 1;
    } else if (character < ' ' || character > '~') {
      throw new FieldError(`bad character in string at ${cursor.at - 1}`);
    } else {
      value += character;
    }
  }
}

function parseBareItem(cursor: Cursor): BareItem {
  const first = peek(cursor);
  if (first === '-' || (first >= '0' && first <= '9')) return parseNumber(cursor);
  if (first === '"') return parseString(cursor);
  if (first === ':') {
    const match = /^:([A-Za-z0-9+/=]*):/.exec(cursor.text.slice(cursor.at));
    if (match === null) throw new FieldError(`bad byte sequence at ${cursor.at}`);
    cursor.at += match[0].length;
    return { type: 'bytes', value: new Uint8Array(Buffer.from(match[1]!, 'base64')) };
  }
  if (first === '?') {
    const match = /^\?[01]/.exec(cursor.text.slice(cursor.at));
    if (match === null) throw new FieldError(`bad boolean at ${cursor.at}`);
    cursor.at += 2;
    return { type: 'boolean', value: match[0] === '?1' };
  }
  const token = /^[A-Za-z*][!#$%&'*+.^_`|~0-9A-Za-z:/-]*/.exec(cursor.text.slice(cursor.at));
  if (token === null) throw new FieldError(`unexpected "${first}" at ${cursor.at}`);
  cursor.at += token[0].length;
  return { type: 'token', value: token[0] };
}

function parseParameters(cursor: Cursor): Parameters {
  const params: Parameters = [];
  while (peek(cursor) === ';') {
    cursor.at += 1;
    skip(cursor, ' ');
    const key = parseKey(cursor);
    let value: BareItem = { type: 'boolean', value: true };
    if (peek(cursor) === '=') {
      cursor.at += 1;
      value = parseBareItem(cursor);
    }
    const existing = params.findIndex(([name]) => name === key);
    if (existing >= 0) params[existing] = [key, value];
    else params.push([key, value]);
  }
  return params;
}

function parseItem(cursor: Cursor): Item {
  const item = parseBareItem(cursor);
  return { kind: 'item', item, params: parseParameters(cursor) };
}

function parseInnerList(cursor: Cursor): InnerList {
  consume(cursor, '(');
  const items: Item[] = [];
  for (;;) {
    skip(cursor, ' ');
    if (peek(cursor) === ')') {
      cursor.at += 1;
      return { kind: 'list', items, params: parseParameters(cursor) };
    }
    items.push(parseItem(cursor));
    if (peek(cursor) !== ' ' && peek(cursor) !== ')') throw new FieldError(`expected " " or ")" at ${cursor.at}`);
  }
}

/** An RFC 8941 dictionary, members in their order; a malformed field throws a FieldError. */
export function parseDictionary(text: string): Map<string, Item | InnerList> {
  const cursor: Cursor = { text, at: 0 };
  const members = new Map<string, Item | InnerList>();
  skip(cursor, ' ');
  while (cursor.at < text.length) {
    const key = parseKey(cursor);
    let member: Item | InnerList;
    if (peek(cursor) === '=') {
      cursor.at += 1;
      member = peek(cursor) === '(' ? parseInnerList(cursor) : parseItem(cursor);
    } else {
      member = { kind: 'item', item: { type: 'boolean', value: true }, params: parseParameters(cursor) };
    }
    members.set(key, member);
    skip(cursor, ' \t');
    if (cursor.at >= text.length) break;
    consume(cursor, ',');
    skip(cursor, ' \t');
    if (cursor.at >= text.length) throw new FieldError('trailing comma');
  }
  return members;
}

function serializeBareItem(item: BareItem): string {
  switch (item.type) {
    case 'string':
      return `"${item.value.replace(/[\\"]/g, (character) => `\\${character}`)}"`;
    case 'token':
      return item.value;
    case 'integer':
      return String(item.value);
    case 'decimal':
      return Number.isInteger(item.value) ? `${item.value}.0` : String(Math.round(item.value * 1000) / 1000);
    case 'bytes':
      return `:${Buffer.from(item.value).toString('base64')}:`;
    case 'boolean':
      return item.value ? '?1' : '?0';
  }
}

const serializeParameters = (params: Parameters): string =>
  params
    .map(([key, value]) =>
      value.type === 'boolean' && value.value ? `;${key}` : `;${key}=${serializeBareItem(value)}`,
    )
    .join('');
export const serializeItem = (item: Item): string => serializeBareItem(item.item) + serializeParameters(item.params);
export const serializeInnerList = (list: InnerList): string =>
  `(${list.items.map(serializeItem).join(' ')})${serializeParameters(list.params)}`;
