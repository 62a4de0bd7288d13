/**
 * The M-Pesa Daraja connector as a unit: Safaricom in KES (STK push, paybill validation and
 * confirmation, B2C, reversals, transaction status), its settings and its callback routes.
 */
import { logger } from '../../log';
import type { ConnectorUnit } from '../adapter';
import { wholeAmounts } from '../amount-rules';
import { DARAJA_CALLBACK_ROUTES } from './callbacks';
import { createDarajaConnector } from './client';
import { DARAJA_CALLBACK_PATHS, DARAJA_NETWORK } from './protocol';
import { DARAJA_VARIABLES, readDarajaSettings, type MpesaSettings } from './settings';

export * from './client';
export * from './protocol';
export type { MpesaSettings } from './settings';

const CALLBACK_PATHS: ReadonlySet<string> = new Set(Object.values(DARAJA_CALLBACK_PATHS));
const amountRule = wholeAmounts('M-Pesa');

export const daraja: ConnectorUnit<'mpesa', MpesaSettings | null> = {
  name: 'daraja',
  configKey: 'mpesa',
  operator: 'M-Pesa Daraja',
  variables: DARAJA_VARIABLES,
  readSettings: readDarajaSettings,
  routesOf: (settings) => (settings ? [{ network: DARAJA_NETWORK, currency: 'KES' }] : []),
  callsBack: true,
  // Daraja cannot be asked by our reference (no look-up), so the window only says how long an answer may come late.
  inFlight: {
    resends: false,
    windowSeconds: 180,
    source: [
      'Safaricom publishes no bound on a held request.',
      'An STK prompt lives on the phone for about a minute (UNANSWERED_PROMPT_SECONDS, 120 s, is our bound for it).',
      '180 s covers that with our 20 s timeout.',
    ].join(' '),
  },
  create: (settings, deps) => {
    const client = createDarajaConnector(settings!, deps, deps.statusPollSeconds);
    return {
      ...client,
      routes: daraja.routesOf(settings),
      amountProblem: (_network, currency, amount) => amountRule(currency, amount),
      async atWorkerStart() {
        if (settings?.registerUrlsAtStart) await registerPaybillUrls(client);
      },
    };
  },
  describe: (settings, simulated) => [
    settings
      ? {
          network: DARAJA_NETWORK,
          currency: 'KES',
          connector: 'M-Pesa Daraja',
          detail: [
            `${new URL(settings.baseUrl).host}, paybill ${settings.shortcode}:`,
            'STK push, paybill validation and confirmation, B2C, reversals',
          ].join(' '),
        }
      : { network: DARAJA_NETWORK, currency: 'KES', connector: 'none', detail: simulated },
  ],
  callbacks: {
    routes: DARAJA_CALLBACK_ROUTES,
    // Counted against the operator and the account its callbacks are for.
    metricName: DARAJA_NETWORK,
    owns: (path) => CALLBACK_PATHS.has(path),
    account: (settings) => `${DARAJA_NETWORK}:${settings?.shortcode ?? '-'}`,
  },
};

/**
 * Registers the paybill's validation and confirmation URLs with Daraja (idempotent; production
 * Daraja takes one registration, so a refusal of a repeat is only logged). It never stops the worker.
 */
async function registerPaybillUrls(client: ReturnType<typeof createDarajaConnector>): Promise<void> {
  try {
    const outcome = await client.registerUrls();
    if (outcome.registered) logger.info('paybill URLs registered with Daraja', { detail: outcome.detail });
    else
      logger.warn('Daraja did not register the paybill URLs (a production shortcode takes one registration)', {
        detail: outcome.detail,
      });
  } catch (error) {
    logger.warn('paybill URLs not registered: Daraja did not answer', { error });
  }
}
