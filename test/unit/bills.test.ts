import { describe, expect, test } from 'bun:test';
import { parseRfcDate } from '../../src/domain/bills';

describe('RFC dates (Bills-date)', () => {
  test('reads RFC 7231 and RFC 2822 forms to the same instant', () => {
    const instant = Date.UTC(1994, 10, 6, 8, 49, 37);
    for (const text of [
      'Sun, 06 Nov 1994 08:49:37 GMT',
      'Sunday, 06-Nov-94 08:49:37 GMT',
      'Sun Nov  6 08:49:37 1994',
      'Sun, 6 Nov 1994 09:49:37 +0100',
      '6 Nov 1994 03:49:37 EST',
    ]) {
      expect(parseRfcDate(text)?.getTime()).toBe(instant);
    }
    expect(parseRfcDate(new Date(instant).toUTCString())?.getTime()).toBe(instant);
  });
  test('refuses other formats, impossible dates and contradicting weekdays', () => {
    for (const text of [
      '',
      '1994-11-06T08:49:37Z',
      'Sun, 06 Nov 1994 25:00:00 GMT',
      'Sun, 30 Feb 1994 08:49:37 GMT',
      'Mon, 06 Nov 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 08:49:37 XYZ',
      'Sun, 06 Nov 1994 08:49:37 +0175',
    ]) {
      expect(parseRfcDate(text)).toBeNull();
    }
  });
});
