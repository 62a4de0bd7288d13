/**
 * The providers' limits as the API's validation rules: `GET /v2/active-conf` read when a process starts
 * (`keepFresh`) and again every PAWAPAY_CONF_REFRESH_SECONDS, so that an amount a provider would
 * refuse (its minimum and maximum per operation, its decimals) is refused at the API with the
 * limit named, before anything is stored or sent. Until the first answer, or when pawaPay cannot be
 * reached, the currency's own rule applies and pawaPay's answer is the last word.
 */
import { currencyDecimals } from '../../domain/money';
import { callOperator } from '../operator-http';
import { amountProblem, formatAmount, readActiveConf, type PawapayLimits } from './limits';
import type { PawapaySettings } from './settings';

type Operation = 'DEPOSIT' | 'PAYOUT' | 'REFUND';
type Warn = (message: string, fields: Record<string, unknown>) => void;

export function createProviderLimits(settings: PawapaySettings, warn: Warn) {
  let table: PawapayLimits | null = null;
  let timer: ReturnType<typeof setInterval> | null = null;

  async function refresh(): Promise<void> {
    try {
      const answer = await callOperator({
        method: 'GET',
        url: `${settings.baseUrl}/v2/active-conf`,
        headers: { Authorization: `Bearer ${settings.apiToken}` },
        timeoutMs: 10_000,
      });
      if (answer.status !== 200) throw new Error(`HTTP ${answer.status}`);
      table = readActiveConf(answer.body);
    } catch (error) {
      warn("pawaPay active configuration not read; the limits last read (or the currencies' own rules) apply", {
        error: String(error),
      });
    }
  }

  /**
   * The decimals pawaPay takes for the provider's currency and operation (the currency's minor units until active-conf
   * says).
   */
  const decimalsOf = (provider: string, currency: string, operation: Operation): number =>
    table?.providers.get(provider)?.currencies.get(currency)?.[operation]?.decimals ??
    Math.min(currencyDecimals(currency) ?? 2, 2);

  return {
    /** Reads the limits now and keeps them fresh (the timer never holds a process open). */
    keepFresh(): void {
      if (timer !== null) return;
      void refresh();
      timer = setInterval(() => void refresh(), settings.confRefreshMs);
      timer.unref?.();
    },
    refresh,
    amountProblem: (provider: string, currency: string, amount: string, operation: Operation): string | null =>
      table === null ? null : amountProblem(table, provider, currency, amount, operation),
    formatAmount: (provider: string, currency: string, amount: string): string =>
      formatAmount(amount, decimalsOf(provider, currency, 'DEPOSIT')),
  };
}
