import { describe, expect, test } from 'bun:test';
import { normalizePhoneNumber, withLeadingPlus } from '../../src/domain/phone';
import { formatTimestamp, parseFilterDate } from '../../src/formats/time';
import { isCurrency, parsePositiveAmount } from '../../src/domain/money';
import { issueApiKey, keyMatches, keyPrefix } from '../../src/auth/keys';
import { parsePythonDict } from '../../src/formats/python-literal';
import { emailCharactersProblem, emailProblem, normalizeEmail } from '../../src/domain/emails';
import { checkFields, email as emailField } from '../../src/domain/input';
import * as v from 'valibot';

describe('phone numbers', () => {
  test.each([
    ['+256772123456', '+256772123456'],
    ['256772123456', '+256772123456'],
    ['+256 772 123-456', '+256772123456'],
    ['+254712345678', '+254712345678'],
    ['+250788123456', '+250788123456'],
    ['+80000000001', '+80000000001'],
    ['+80000000009', '+80000000009'],
  ])('%s normalises to %s', (input, expected) => {
    expect(normalizePhoneNumber(input)).toBe(expected);
  });

  test.each(['', '+', '12', '+2567721', '+25677212345678', 'abc', '+256 77x 123456', '0772123456'])(
    '%p is rejected',
    (input) => {
      expect(normalizePhoneNumber(input)).toBeNull();
    },
  );

  test('withLeadingPlus only adds the plus', () => {
    expect(withLeadingPlus('256700')).toBe('+256700');
    expect(withLeadingPlus('+256700')).toBe('+256700');
  });
});

describe('time', () => {
  test('timestamps are YYYY-MM-DDTHH:MM:SSZ in UTC', () => {
    expect(formatTimestamp(new Date('2024-03-05T07:08:09.987Z'))).toBe('2024-03-05T07:08:09Z');
  });

  test.each([
    ['2024-05-01 13:45', '2024-05-01T13:45:00.000Z'],
    ['2024-05-01', '2024-05-01T00:00:00.000Z'],
    ['2024-05-01T13:45:10', '2024-05-01T13:45:10.000Z'],
    ['2024-05-01 13:45+03:00', '2024-05-01T10:45:00.000Z'],
  ])('filter date %s', (input, expected) => {
    expect(parseFilterDate(input)?.toISOString()).toBe(expected);
  });

  test.each(['yesterday', '2024-02-31', '2024-13-01 10:00', '01/05/2024', ''])('filter date %p is invalid', (input) => {
    expect(parseFilterDate(input)).toBeNull();
  });
});

describe('money', () => {
  test.each([
    ['10', '10'],
    ['0.5', '0.5'],
    ['1000.1234', '1000.1234'],
  ])('%s is an amount', (input, expected) => {
    expect(parsePositiveAmount(input)).toBe(expected);
  });
  test.each(['0', '0.00', '-1', '1,000', '1.23456', '1e5', 'abc', '01'])('%p is not', (input) => {
    expect(parsePositiveAmount(input)).toBeNull();
  });
  test('currencies', () => {
    expect(isCurrency('BXC')).toBe(true);
    expect(isCurrency('EUR')).toBe(false);
  });
});

describe('API keys', () => {
  test('a key matches only its own digest', () => {
    const one = issueApiKey();
    const two = issueApiKey();
    expect(one.key).toMatch(/^[0-9a-f]{40}$/);
    expect(keyPrefix(one.key)).toBe(one.prefix);
    expect(keyMatches(one.key, one.digest)).toBe(true);
    expect(keyMatches(two.key, one.digest)).toBe(false);
  });
});

describe('Python dict literals (metadata as some clients send it)', () => {
  test("a flat hash of strings, numbers, True, False and None, with Python's escapes", () => {
    expect(parsePythonDict("{'id': '1234', 'name': 'Lucy'}")).toEqual({ id: '1234', name: 'Lucy' });
    expect(
      parsePythonDict(`{ "a" : 1, 'b': -2.5, 'c': True, 'd': False, 'e': None, u'f': 'it\\'s \\x41\\u00e9\\n', }`),
    ).toEqual({ a: 1, b: -2.5, c: true, d: false, e: null, f: "it's A\u00e9\n" });
    expect(parsePythonDict('{}')).toEqual({});
    expect(parsePythonDict("{'n': 12345678901234567890}")).toEqual({ n: '12345678901234567890' });
    const proto = parsePythonDict("{'__proto__': 'x'}")!;
    expect(Object.keys(proto)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
  });

  test('anything else is not this form', () => {
    for (const text of [
      "{'a': {'b': 1}}",
      "{'a': [1]}",
      "{'a': 1",
      "{'a' 1}",
      '{a: 1}',
      "{'a': 1} x",
      "{'a': 'open}",
      "['a']",
      "{'a': 1,, 'b': 2}",
      '{\'a\': "x\\xZZ"}',
    ]) {
      expect({ text, parsed: parsePythonDict(text) }).toEqual({ text, parsed: null });
    }
  });
});

describe('emails', () => {
  test("one normalised form: trimmed, NFKC, lower case by JavaScript's rules", () => {
    expect(normalizeEmail('  Pat.Payer@Example.COM ')).toBe('pat.payer@example.com');
    expect(normalizeEmail('\uFF50at@example.com')).toBe('pat@example.com');
    expect(normalizeEmail('vİctim@x.example')).toBe('vi\u0307ctim@x.example');
    expect(normalizeEmail('vİctim@x.example')).not.toBe(normalizeEmail('victim@x.example'));
  });

  test.each([
    ['pat.payer@example.com'],
    ['pat+tag_01@mail.example.co.ug'],
    // Wholly in one other script, local part and domain.
    ['иван.петров@пример.рф'],
    ['иван@example.com'],
    ['γιώργος@example.gr'],
    ['δοκιμή@παράδειγμα.ελ'],
    // Scripts written together: Japanese (Han and kana), Korean (Han and Hangul), each with Latin.
    ['やまだ太郎@example.jp'],
    ['tanaka太郎@example.jp'],
    ['홍길동漢@example.kr'],
    // Combining marks belong to the letter before them; an IDNA label wholly in one script.
    ['jose\u0301@example.com'],
    ['pat@xn--80ak6aa92e.com'],
  ])('%s may be used', (address) => {
    expect(emailProblem(normalizeEmail(address))).toBeNull();
  });

  test.each([
    ['a zero-width space', 'pat\u200b@example.com'],
    ['a zero-width space in the domain', 'pat@exam\u200bple.com'],
    ['a zero-width joiner', 'pat\u200d@example.com'],
    ['a zero-width non-joiner', 'p\u200cat@example.com'],
    ['a byte order mark inside', 'pat\ufeffpayer@example.com'],
    ['a soft hyphen', 'pat\u00adpayer@example.com'],
    ['a right-to-left override', 'pat\u202epayer@example.com'],
    ['a bidi isolate', 'pat\u2066payer\u2069@example.com'],
    ['a left-to-right mark', 'pat\u200e@example.com'],
    ['a control character', 'pat\u0007@example.com'],
    ['a DEL', 'pat\u007f@example.com'],
    ['a variation selector', 'pat\ufe0f@example.com'],
    ['a Hangul filler', 'pat\u3164@example.com'],
    ['a private-use character', 'pat\ue000@example.com'],
  ])('an address with %s is refused as invisible', (_what, address) => {
    expect(emailProblem(normalizeEmail(address))).toContain('invisible or control characters');
    expect(emailCharactersProblem(address)).toContain('invisible or control characters');
  });

  test.each([
    ['a Cyrillic а in a Latin local part', 'p\u0430ypal@example.com', 'part before the @', 'Latin and Cyrillic'],
    ['a Greek ο in a Latin local part', 'b\u03bfb@example.com', 'part before the @', 'Latin and Greek'],
    ['a Latin o in a Cyrillic local part', 'ив\u006fн@example.com', 'part before the @', 'Cyrillic and Latin'],
    ['a Cyrillic е in a Latin domain label', 'pat@\u0435xample.com', 'domain', 'Cyrillic and Latin'],
    ['a Greek letter in the top-level domain', 'pat@example.c\u03bfm', 'domain', 'Latin and Greek'],
    [
      'an IDNA label that decodes to a Cyrillic а among Latin letters',
      'pat@xn--pple-43d.com',
      'domain',
      'Cyrillic and Latin',
    ],
    ['a Cherokee letter among Latin ones', 'p\u13aat@example.com', 'part before the @', 'Latin and Cherokee'],
  ])('an address with %s is refused as mixing scripts', (_what, address, where, scripts) => {
    const problem = emailProblem(normalizeEmail(address));
    expect(problem).toContain(where);
    expect(problem).toContain(`mixes ${scripts} letters`);
  });

  test('the shape and the length are still checked; an IDNA label that does not decode is refused', () => {
    expect(emailProblem('pat@example')).toBe('Enter a valid email address.');
    expect(emailProblem(`${'a'.repeat(250)}@example.com`)).toBe('Enter a valid email address.');
    expect(emailProblem('pat@xn--.com')).toBe('Enter a valid email address.');
  });

  test('the email schema of request bodies applies the same rule, its message first', () => {
    const schema = v.object({ email: emailField });
    expect(checkFields(schema, { email: 'Pat@Example.com' })).toEqual({
      success: true,
      output: { email: 'Pat@Example.com' },
    });
    const invisible = checkFields(schema, { email: 'pat\u200b@example.com' });
    expect(invisible.success ? [] : invisible.errors.email).toEqual([emailCharactersProblem('pat\u200b@example.com')!]);
    const mixed = checkFields(schema, { email: 'pat@xn--pple-43d.com' });
    expect(mixed.success ? [] : mixed.errors.email![0]).toContain('mixes Cyrillic and Latin letters');
  });
});
