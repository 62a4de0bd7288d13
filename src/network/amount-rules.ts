/**
 * The operators' own amount rules, shared by their connectors (`Connector.amountProblem`): some
 * take whole amounts only, others the currency's minor units (so whole amounts of a currency without
 * them). Any amount an operator takes still follows its currency's rule (domain/money.ts).
 */
import { currencyDecimals } from '../domain/money';

const hasFraction = (amount: string): boolean => !/^0*$/.test(amount.split('.')[1] ?? '');
const wholeOnly = (operator: string, currency: string) =>
  `${operator} takes whole amounts only: enter ${currency} without decimals.`;

/** An operator that takes whole amounts in every currency (M-Pesa Daraja, Airtel Money). */
export const wholeAmounts =
  (operator: string) =>
  (currency: string, amount: string): string | null =>
    hasFraction(amount) ? wholeOnly(operator, currency) : null;

/** An operator that takes the currency's minor units (MoMo, the M-Pesa OpenAPI). */
export const minorUnits =
  (operator: string) =>
  (currency: string, amount: string): string | null =>
    hasFraction(amount) && currencyDecimals(currency) === 0 ? wholeOnly(operator, currency) : null;
