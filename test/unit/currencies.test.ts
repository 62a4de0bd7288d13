/** The currencies of the service's markets: one table, each currency's minor units, and the networks that carry it. */
import { describe, expect, test } from 'bun:test';
import { CURRENCIES, SUPPORTED_CURRENCIES, currenciesOfCountry, currencyAmountProblem } from '../../src/domain/money';
import { currenciesOfNetwork, moneyNetwork, networkByName, networkForMoney } from '../../src/domain/networks';

const SANDBOX = { sandboxMode: true, connected: new Set<string>() };

describe('the currency table', () => {
  test('every currency of the markets, with its minor units', () => {
    expect(SUPPORTED_CURRENCIES).toEqual(['BXC', 'UGX', 'KES', 'TZS', 'RWF', 'GHS', 'CDF', 'USD']);
    const decimals = Object.fromEntries(CURRENCIES.map((currency) => [currency.code, currency.decimals]));
    expect(decimals).toEqual({ BXC: 4, UGX: 0, KES: 2, TZS: 0, RWF: 0, GHS: 2, CDF: 2, USD: 2 });
  });

  test("a country may have two currencies; the DRC's networks carry CDF and USD", () => {
    expect(currenciesOfCountry('CD')).toEqual(['CDF', 'USD']);
    expect(currenciesOfCountry('GH')).toEqual(['GHS']);
    expect(currenciesOfCountry('ZZ')).toEqual([]);
    expect(currenciesOfNetwork(networkByName('Orange DRC')!)).toEqual(['CDF', 'USD']);
    expect(currenciesOfNetwork(networkByName('Halotel')!)).toEqual(['TZS']);
    expect(currenciesOfNetwork(networkByName('Sandbox')!)).toEqual(['BXC']);
  });
});

describe('minor units', () => {
  test.each([
    ['UGX', '1500', null],
    ['UGX', '1500.0000', null],
    ['UGX', '1500.5', 'UGX has no minor unit: enter UGX without decimals.'],
    ['TZS', '10.25', 'TZS has no minor unit: enter TZS without decimals.'],
    ['RWF', '100.10', 'RWF has no minor unit: enter RWF without decimals.'],
    ['GHS', '10.25', null],
    ['GHS', '10.2500', null],
    ['GHS', '10.255', 'GHS takes at most 2 decimals.'],
    ['KES', '99.99', null],
    ['USD', '0.01', null],
    ['CDF', '1.001', 'CDF takes at most 2 decimals.'],
    ['BXC', '100.2005', null],
  ])('%s %s', (currency, amount, problem) => {
    expect(currencyAmountProblem(currency, amount)).toBe(problem);
  });

  test('validation names the amount that has too many decimals, and the number a currency cannot be moved on', () => {
    expect(moneyNetwork('+255741234567', 'TZS', '100.5', SANDBOX).errors).toEqual({
      amount: ['TZS has no minor unit: enter TZS without decimals.'],
    });
    expect(moneyNetwork('+233241234567', 'GHS', '10.25', SANDBOX)).toMatchObject({
      network: { name: 'MTN Ghana' },
      errors: {},
    });
    expect(moneyNetwork('+243811234567', 'USD', '10.25', SANDBOX)).toMatchObject({
      network: { name: 'Vodacom DRC' },
      errors: {},
    });
    expect(moneyNetwork('+243971234567', 'CDF', '1000', SANDBOX)).toMatchObject({
      network: { name: 'Airtel DRC' },
      errors: {},
    });
    const ghanaian = moneyNetwork('+233241234567', 'USD', '10', SANDBOX);
    expect(ghanaian.network).toBeNull();
    expect(ghanaian.errors.phonenumber![0]).toBe(
      'USD collections need a number on a Congolese mobile network (Vodacom DRC, Airtel DRC, Orange DRC, Africell DRC); this number is not on one.',
    );
    expect(networkForMoney('+250781234567', 'RWF', { sandboxMode: true, connected: new Set() }).network?.name).toBe(
      'MTN Rwanda',
    );
  });
});
