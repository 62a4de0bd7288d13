/**
 * A flat string-keyed hash written as a Python dict literal, `{'id': '1234', 'name': 'Lucy'}`: some
 * of the provider's client libraries send `metadata` that way (form-encoded, where JSON was meant),
 * and the provider's service took it. Keys are quoted strings; values are quoted strings, integers,
 * decimals, True, False or None. Nothing nests: a list or a hash inside is not this form.
 */
type FlatHash = Record<string, string | number | boolean | null>;

const ESCAPES: Readonly<Record<string, string>> = {
  '\\': '\\',
  "'": "'",
  '"': '"',
  n: '\n',
  r: '\r',
  t: '\t',
  b: '\b',
  f: '\f',
  '0': '\0',
};
const NUMBER = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/;
const WORD = /^(True|False|None)\b/;

/** The hash, or null when `text` is not a flat Python dict literal. */
export function parsePythonDict(text: string): FlatHash | null {
  let index = 0;
  const skipSpace = () => {
    while (index < text.length && /\s/.test(text[index]!)) index += 1;
  };
  const take = (char: string): boolean => {
    skipSpace();
    if (text[index] !== char) return false;
    index += 1;
    return true;
  };

  /** A quoted string ('…' or "…", optionally u-prefixed) with Python's escapes, or null. */
  const readString = (): string | null => {
    skipSpace();
    if (text[index] === 'u' || text[index] === 'U') index += 1;
    const quote = text[index];
    if (quote !== "'" && quote !== '"') return null;
    index += 1;
    let value = '';
    while (index < text.length) {
      const char = text[index]!;
      index += 1;
      if (char === quote) return value;
      if (char !== '\\') {
        value += char;
        continue;
      }
      const escaped = text[index];
      if (escaped === undefined) return null;
      index += 1;
      if (escaped in ESCAPES) value += ESCAPES[escaped];
      else if (escaped === 'x' || escaped === 'u') {
        const digits = text.slice(index, index + (escaped === 'x' ? 2 : 4));
        if (!/^[0-9a-fA-F]+$/.test(digits) || digits.length !== (escaped === 'x' ? 2 : 4)) return null;
        value += String.fromCharCode(parseInt(digits, 16));
        index += digits.length;
      } else value += `\\${escaped}`;
    }
    return null;
  };

  const readValue = (): { value: string | number | boolean | null } | null => {
    skipSpace();
    const rest = text.slice(index);
    const word = WORD.exec(rest);
    if (word) {
      index += word[0].length;
      return { value: word[1] === 'True' ? true : word[1] === 'False' ? false : null };
    }
    const number = NUMBER.exec(rest);
    if (number) {
      index += number[0].length;
      // A number JavaScript cannot hold exactly keeps its text, so nothing is rounded silently.
      const parsed = Number(number[0]);
      return {
        value:
          Number.isSafeInteger(parsed) || (Number.isFinite(parsed) && String(parsed) === number[0])
            ? parsed
            : number[0],
      };
    }
    const string = readString();
    return string === null ? null : { value: string };
  };

  if (!take('{')) return null;
  const hash: FlatHash = {};
  if (!take('}')) {
    for (;;) {
      const key = readString();
      if (key === null || !take(':')) return null;
      const entry = readValue();
      if (entry === null) return null;
      Object.defineProperty(hash, key, { value: entry.value, enumerable: true, writable: true, configurable: true });
      if (take('}')) break;
      if (!take(',')) return null;
      if (take('}')) break;
    }
  }
  skipSpace();
  return index === text.length ? hash : null;
}
