/** An amount's error names what is wrong with it, not a list of every rule an amount keeps. */
import { describe, expect, test } from 'bun:test';
import * as v from 'valibot';
import { amountField, checkFields } from '../../src/domain/input';
import { amountProblem, currencyAmountProblem, parsePositiveAmount } from '../../src/domain/money';

const amountErrors = (amount: unknown) => {
  const checked = checkFields(v.object({ amount: amountField }), { amount });
  return checked.success ? null : checked.errors.amount;
};

describe('amount errors', () => {
  test.each([
    ['0100', 'without leading zeros'],
    ['00.5', 'without leading zeros'],
    ['-5', 'without a sign'],
    ['+5', 'without a sign'],
    ['-0', 'without a sign'],
    ['1 0', 'without spaces'],
    ['1,000', 'leave out thousands separators'],
    ['1 000 000', 'leave out thousands separators'],
    ['1e2', 'without an exponent'],
    ['1.5E+3', 'without an exponent'],
    ['.5', 'both sides of the decimal point'],
    ['5.', 'both sides of the decimal point'],
    ['ten', 'A valid number is required.'],
    ['', 'A valid number is required.'],
    ['0x10', 'A valid number is required.'],
    ['0', 'greater than 0'],
    ['0.0000', 'greater than 0'],
    ['1.23456', 'no more than 4 decimal places'],
    ['1000000000.0001', 'at most 1,000,000,000'],
    ['99999999999999999999', 'at most 1,000,000,000'],
  ])('%p: %s', (amount, expected) => {
    const problem = amountProblem(amount);
    expect(problem).toContain(expected);
    expect(parsePositiveAmount(amount)).toBeNull();
    // Each message speaks of its own fault only.
    if (!expected.includes('decimal places')) expect(problem).not.toContain('decimal places');
  });

  test.each(['1', '0.5', '100', '1000.1234', '1000000000', '1500.0000'])('%p is an amount', (amount) => {
    expect(amountProblem(amount)).toBeNull();
    expect(parsePositiveAmount(amount)).toBe(amount);
  });

  test("the API field answers the amount's own fault, however it is sent", () => {
    expect(amountErrors('0100')).toEqual(['Enter the amount without leading zeros (100, not 0100).']);
    expect(amountErrors(' 250 ')).toBeNull();
    expect(amountErrors(-5)).toEqual(['Enter the amount without a sign: an amount is always positive.']);
    expect(amountErrors(1e21)).toEqual(['Enter the amount in plain digits, without an exponent (100, not 1e2).']);
    expect(amountErrors(true)).toEqual(['A valid number is required.']);
  });

  test("a currency's minor units: too many decimals for the currency, named by the currency", () => {
    expect(currencyAmountProblem('UGX', '100.5')).toBe('UGX has no minor unit: enter UGX without decimals.');
    expect(currencyAmountProblem('KES', '100.505')).toBe('KES takes at most 2 decimals.');
    expect(currencyAmountProblem('UGX', '100.0000')).toBeNull();
    // "0100" is refused before its currency is considered: the fault is the leading zero.
    expect(amountErrors('0100')?.[0]).not.toContain('decimal');
  });
});
