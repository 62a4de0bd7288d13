import { describe, expect, test } from 'bun:test';
import { formatSpecDate, parseRequestDate } from '../../src/formats/dates';
import { networkForNumber } from '../../src/domain/networks';
import {
  MAX_SUBSCRIPTION_OCCURRENCES,
  MERCHANT_FREQUENCIES,
  exceedsOccurrenceLimit,
  nextOccurrence,
  occurrences,
  type Subscription,
} from '../../src/domain/subscriptions';
import { displayAmount, successMessage } from '../../src/domain/collection-requests';

const NOW = new Date('2025-03-10T12:00:00Z');

describe('request date strings', () => {
  test.each([
    ['tomorrow', '2025-03-11T12:00:00.000Z'],
    ['24 hours', '2025-03-11T12:00:00.000Z'],
    ['2 minutes', '2025-03-10T12:02:00.000Z'],
    ['1 minute', '2025-03-10T12:01:00.000Z'],
    ['3 days', '2025-03-13T12:00:00.000Z'],
    ['31/12/2025', '2025-12-31T00:00:00.000Z'],
    ['31/12/2025 13:45:10', '2025-12-31T13:45:10.000Z'],
    ['1/2/2026 08:05', '2026-02-01T08:05:00.000Z'],
    ['2025-12-31T13:45:10Z', '2025-12-31T13:45:10.000Z'],
  ])('%s', (input, expected) => {
    expect(parseRequestDate(input, NOW)?.toISOString()).toBe(expected);
  });

  test.each(['never', '31/02/2025', '12/31/2025', '2 fortnights', '', '25:00', '31/12/2025 24:00:00'])(
    '%p is rejected',
    (input) => {
      expect(parseRequestDate(input, NOW)).toBeNull();
    },
  );

  test('the API form of expiry dates', () => {
    expect(formatSpecDate(new Date('2018-05-26T19:06:51.300Z'), 300273)).toBe('2018-05-26 19:06:51.300273+00:00');
  });
});

describe('networks', () => {
  test.each([
    ['+256772123456', 'MTN Uganda', true],
    ['+256701234567', 'Airtel Uganda', false],
    ['+254712345678', 'Safaricom', true],
    ['+254733123456', 'Airtel Kenya', false],
    ['+254757123456', 'Safaricom', true],
    ['+254751123456', 'Airtel Kenya', false],
    ['+255754123456', 'Vodacom Tanzania', true],
    ['+255654123456', 'Tigo Tanzania', true],
    ['+250788123456', 'MTN Rwanda', true],
    ['+250721234567', 'Airtel Rwanda', true],
    ['+233241234567', 'MTN Ghana', false],
    ['+243811234567', 'Vodacom DRC', false],
    ['+80000000001', 'Sandbox', true],
  ])('%s is on %s (verification %p)', (number, name, verification) => {
    const network = networkForNumber(number);
    expect(network?.name).toBe(name);
    expect(network?.verification).toBe(verification);
  });

  test('numbers of other countries have no network here', () => {
    expect(networkForNumber('+14155552671')).toBeNull();
  });
});

describe('subscriptions', () => {
  const at = (iso: string) => new Date(iso);
  const rule = (
    frequency: Subscription['frequency'],
    start: string,
    end: string,
    extra: Partial<Subscription> = {},
  ): Subscription => ({
    frequency,
    startDate: at(start),
    endDate: at(end),
    ...extra,
  });
  const iso = (dates: Date[]) => dates.map((date) => date.toISOString().replace('.000Z', 'Z'));

  test('minutely, hourly, daily step from the start and stop at the end (inclusive)', () => {
    expect(iso(occurrences(rule('minutely', '2025-01-01T00:00:30Z', '2025-01-01T00:02:30Z')))).toEqual([
      '2025-01-01T00:00:30Z',
      '2025-01-01T00:01:30Z',
      '2025-01-01T00:02:30Z',
    ]);
    expect(occurrences(rule('hourly', '2025-01-01T00:00:00Z', '2025-01-01T05:59:00Z'))).toHaveLength(6);
    expect(occurrences(rule('daily', '2025-01-01T09:00:00Z', '2025-01-31T09:00:00Z'))).toHaveLength(31);
  });

  test('weekly keeps the weekday; with weekdays it takes each chosen day', () => {
    expect(iso(occurrences(rule('weekly', '2025-01-06T09:00:00Z', '2025-01-27T09:00:00Z')))).toEqual([
      '2025-01-06T09:00:00Z',
      '2025-01-13T09:00:00Z',
      '2025-01-20T09:00:00Z',
      '2025-01-27T09:00:00Z',
    ]);
    // Mondays and Fridays (1 and 5) in the first two weeks of 2025 from Monday 6 January.
    expect(
      iso(occurrences(rule('weekly', '2025-01-06T09:00:00Z', '2025-01-17T23:00:00Z', { weekdays: [1, 5] }))),
    ).toEqual(['2025-01-06T09:00:00Z', '2025-01-10T09:00:00Z', '2025-01-13T09:00:00Z', '2025-01-17T09:00:00Z']);
  });

  test('monthly clamps to the last day of short months; months filter skips the others', () => {
    expect(iso(occurrences(rule('monthly', '2025-01-31T08:00:00Z', '2025-04-30T08:00:00Z')))).toEqual([
      '2025-01-31T08:00:00Z',
      '2025-02-28T08:00:00Z',
      '2025-03-31T08:00:00Z',
      '2025-04-30T08:00:00Z',
    ]);
    expect(
      iso(occurrences(rule('monthly', '2025-01-15T08:00:00Z', '2025-12-31T08:00:00Z', { months: [3, 6] }))),
    ).toEqual(['2025-03-15T08:00:00Z', '2025-06-15T08:00:00Z']);
  });

  test('yearly keeps the date; leap days fall back to 28 February', () => {
    expect(iso(occurrences(rule('yearly', '2024-02-29T00:00:00Z', '2027-03-01T00:00:00Z')))).toEqual([
      '2024-02-29T00:00:00Z',
      '2025-02-28T00:00:00Z',
      '2026-02-28T00:00:00Z',
      '2027-02-28T00:00:00Z',
    ]);
  });

  test('nextOccurrence skips ahead without walking every step, and ends with null', () => {
    const everyMinuteForAYear = rule('minutely', '2025-01-01T00:00:00Z', '2025-12-31T23:59:00Z');
    expect(nextOccurrence(everyMinuteForAYear, at('2025-07-01T10:00:30Z'))?.toISOString()).toBe(
      '2025-07-01T10:01:00.000Z',
    );
    expect(nextOccurrence(everyMinuteForAYear, at('2025-12-31T23:59:00Z'))).toBeNull();
  });

  test('the occurrence limit counts what occurrences lists, the first included, and stops counting past it', () => {
    expect(MAX_SUBSCRIPTION_OCCURRENCES).toBe(1000);
    const daily = (end: string, extra: Partial<Subscription> = {}) => rule('daily', '2025-01-01T09:00:00Z', end, extra);
    // 01/01/2025 plus 999 days: the 1,000th occurrence.
    const thousandth = new Date(Date.UTC(2025, 0, 1, 9) + 999 * 86_400_000).toISOString();
    expect(occurrences(daily(thousandth), 2000)).toHaveLength(1000);
    expect(exceedsOccurrenceLimit(daily(thousandth))).toBe(false);
    const oneMore = new Date(Date.parse(thousandth) + 86_400_000).toISOString();
    expect(exceedsOccurrenceLimit(daily(oneMore))).toBe(true);
    // Weekdays thin the schedule out: Mondays only for ten years is about 522.
    expect(exceedsOccurrenceLimit(daily('2034-12-31T09:00:00Z', { weekdays: [1] }))).toBe(false);
    expect(exceedsOccurrenceLimit(rule('monthly', '2025-01-31T09:00:00Z', '2099-12-31T09:00:00Z'))).toBe(false);
    // The schedule of the finding: every minute to 2099, answered at once.
    const started = performance.now();
    expect(exceedsOccurrenceLimit(rule('minutely', '2025-01-02T00:00:00Z', '2099-12-31T23:59:00Z'))).toBe(true);
    expect(performance.now() - started).toBeLessThan(100);
  });

  test('a merchant chooses daily at the most often', () => {
    expect([...MERCHANT_FREQUENCIES]).toEqual(['yearly', 'monthly', 'weekly', 'daily']);
  });
});

describe('messages', () => {
  test('success message fills placeholders and appends the attribution', () => {
    const text = successMessage('Thanks {customer}, {amount} received', {
      amount: '1500.5000',
      currency: 'UGX',
      customer: 'Jo Doe',
      organization: 'Acme',
      code: '1-2',
    });
    expect(text).toBe('Thanks Jo Doe, 1500.5 received - via Collections');
    expect(displayAmount('1500.0000')).toBe('1500');
  });
});
