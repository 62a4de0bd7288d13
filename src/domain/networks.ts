import { countriesOfCurrency, currenciesOfCountry, currencyAmountProblem, type Currency } from './money';
import { isSandboxTestNumber } from './phone';

/**
 * Mobile networks by number prefix (after the country code), for the countries the service serves.
 * `verification`: the network supports the collection verification callback (docs/api.md#collections: one
 * Kenyan operator, one Ugandan, two Tanzanian, all Rwandan). `nameLookup`: contact instant
 * verification (docs/api.md#contacts). `pullsFunds`: the network can push a USSD/PIN prompt that pulls funds.
 */
export type Network = {
  /** Stable for good (`GET /api/networks/<id>`): an id is never renumbered or given to another network. */
  id: number;
  name: string;
  country: string;
  verification: boolean;
  nameLookup: boolean;
  pullsFunds: boolean;
};

type NetworkRule = Network & { countryCode: string; prefixes: string[] };

const rule = (
  id: number,
  name: string,
  country: string,
  countryCode: string,
  prefixes: string[],
  flags: { verification?: boolean; nameLookup?: boolean; pullsFunds?: boolean } = {},
): NetworkRule => ({
  id,
  name,
  country,
  countryCode,
  prefixes,
  verification: flags.verification ?? false,
  nameLookup: flags.nameLookup ?? false,
  pullsFunds: flags.pullsFunds ?? true,
});

const RULES: NetworkRule[] = [
  rule(2, 'MTN Uganda', 'UG', '256', ['77', '78', '76', '39'], { verification: true, nameLookup: true }),
  rule(3, 'Airtel Uganda', 'UG', '256', ['70', '75', '74', '20'], { nameLookup: true }),
  rule(4, 'Safaricom', 'KE', '254', ['70', '71', '72', '74', '757', '758', '759', '768', '769', '79', '11'], {
    verification: true,
    nameLookup: true,
  }),
  rule(5, 'Airtel Kenya', 'KE', '254', ['73', '750', '751', '752', '753', '754', '755', '756', '762', '78', '10']),
  rule(6, 'Vodacom Tanzania', 'TZ', '255', ['74', '75', '76'], { verification: true, nameLookup: true }),
  rule(7, 'Tigo Tanzania', 'TZ', '255', ['65', '67', '71'], { verification: true }),
  rule(8, 'Airtel Tanzania', 'TZ', '255', ['68', '69', '78']),
  rule(9, 'Halotel', 'TZ', '255', ['61', '62']),
  rule(10, 'MTN Rwanda', 'RW', '250', ['78', '79'], { verification: true, nameLookup: true }),
  rule(11, 'Airtel Rwanda', 'RW', '250', ['72', '73'], { verification: true }),
  rule(12, 'MTN Ghana', 'GH', '233', ['24', '54', '55', '59', '25', '53'], { nameLookup: true }),
  rule(13, 'Telecel Ghana', 'GH', '233', ['20', '50']),
  rule(14, 'AirtelTigo', 'GH', '233', ['26', '56', '27', '57']),
  rule(15, 'Vodacom DRC', 'CD', '243', ['81', '82', '83'], { nameLookup: true }),
  rule(16, 'Airtel DRC', 'CD', '243', ['97', '98', '99']),
  rule(17, 'Orange DRC', 'CD', '243', ['84', '85', '89', '80']),
  rule(18, 'Africell DRC', 'CD', '243', ['90', '91']),
];

/** The sandbox network answers the test numbers `+800000000NN`; verification and look-ups included. */
export const SANDBOX_NETWORK: Network = {
  id: 1,
  name: 'Sandbox',
  country: 'ZZ',
  verification: true,
  nameLookup: true,
  pullsFunds: true,
};

/** Longest matching prefix wins (Kenya's 75x split between operators). */
export function networkForNumber(e164: string): Network | null {
  if (isSandboxTestNumber(e164)) return SANDBOX_NETWORK;
  let best: { network: NetworkRule; length: number } | null = null;
  for (const network of RULES) {
    const national = e164.startsWith(`+${network.countryCode}`) ? e164.slice(network.countryCode.length + 1) : null;
    if (national === null) continue;
    for (const prefix of network.prefixes) {
      if (national.startsWith(prefix) && (best === null || prefix.length > best.length))
        best = { network, length: prefix.length };
    }
  }
  if (best === null) return null;
  const { countryCode: _countryCode, prefixes: _prefixes, ...network } = best.network;
  return network;
}

/** The countries of the networks, as messages name them. */
const COUNTRY_NAMES: Readonly<Record<string, string>> = {
  UG: 'Ugandan',
  KE: 'Kenyan',
  TZ: 'Tanzanian',
  RW: 'Rwandan',
  GH: 'Ghanaian',
  CD: 'Congolese',
};

/**
 * The currencies a network's collections and payments may use: its country's (money.ts `CURRENCIES`;
 * the DRC's networks carry CDF and USD), BXC for the sandbox; none when the service handles none.
 */
export function currenciesOfNetwork(network: Network): Currency[] {
  if (network.name === SANDBOX_NETWORK.name) return ['BXC'];
  return currenciesOfCountry(network.country);
}

/** Every network the service knows: the sandbox network, then the operators by country. */
export function knownNetworks(): Network[] {
  return [SANDBOX_NETWORK, ...RULES.map(({ countryCode: _countryCode, prefixes: _prefixes, ...network }) => network)];
}

type NetworkChoice = { network: Network; problem?: undefined } | { network?: undefined; problem: string };

/**
 * The network that serves a collection from `e164` in `currency` (docs/api.md#collection-requests, `phonenumber`): BXC,
 * the sandbox currency, takes any possible number, on its own network when the number is on a known one (so
 * verification rules follow it) and on the sandbox network otherwise; a real currency needs a known network of its own
 * country. The problem says which rule the number broke.
 */
function networkForCollection(e164: string, currency: string, sandboxMode: boolean): NetworkChoice {
  const known = networkForNumber(e164);
  const countries = countriesOfCurrency(currency);
  if (known?.name === SANDBOX_NETWORK.name || (currency === 'BXC' && known === null)) {
    if (!sandboxMode)
      return { problem: 'This number is served only by the sandbox network, which runs in sandbox mode only.' };
    if (countries.length > 0)
      return { problem: `The sandbox test numbers take BXC, the sandbox currency, not ${currency}.` };
    return { network: SANDBOX_NETWORK };
  }
  if (countries.length === 0) return { network: known! };
  if (known === null || !countries.includes(known.country)) {
    const names = RULES.filter((rule) => countries.includes(rule.country)).map((rule) => rule.name);
    const country = countries.map((code) => COUNTRY_NAMES[code] ?? code).join(' or ');
    return {
      problem: [
        `${currency} collections need a number on a ${country} mobile network (${names.join(', ')});`,
        'this number is not on one.',
      ].join(' '),
    };
  }
  return { network: known };
}

/**
 * What moves money, as the API's validation sees it: a collection (a prompt), a payment, or a reversal of a collection.
 */
export type MoneyOperation = 'collection' | 'payment' | 'reversal';

/**
 * What the API's validation knows of the connectors (src/network/registry.ts builds it): sandbox mode, the
 * networks with a connector, and the operator's own amount rule on each (null when it takes the amount).
 */
export type Connections = {
  sandboxMode: boolean;
  connected: ReadonlySet<string>;
  amountProblem?: (network: Network, currency: string, amount: string, operation: MoneyOperation) => string | null;
};

/**
 * Why the sandbox may not move `currency` for `network`, a network with no connector (null when
 * it may). BXC always; a real currency only in sandbox mode, and only while no connector is on at
 * all: simulated money never shares a wallet with money that leaves through a real operator
 * (docs/going-live.md, "The sandbox and live connectors do not mix").
 */
export function sandboxMoneyProblem(
  network: Network,
  currency: string,
  { sandboxMode, connected }: Connections,
): string | null {
  if (currency === 'BXC') return null;
  if (!sandboxMode)
    return [
      `${network.name} is not connected to this service: ${currency} cannot be moved on it`,
      `(no ${network.name} connector is configured).`,
    ].join(' ');
  if (connected.size > 0) {
    return [
      'While an operator connector is on, the sandbox simulates BXC only:',
      `${network.name} has no connector here, so ${currency} cannot be moved on it`,
      '(simulated money never shares a wallet with real money).',
      'Use BXC, or a network this deployment is connected to.',
    ].join(' ');
  }
  return null;
}

/**
 * The network that moves a request's or a payment's money (`networkForCollection`), with the
 * connectors' rules: BXC always goes to the sandbox; a real currency goes to its network's
 * connector, or to the sandbox that simulates a network with none while `sandboxMoneyProblem`
 * allows it; otherwise it moves no money (refused here, naming the network).
 */
export function networkForMoney(e164: string, currency: string, connections: Connections): NetworkChoice {
  const choice = networkForCollection(e164, currency, connections.sandboxMode);
  if (choice.problem !== undefined || connections.connected.has(choice.network.name)) return choice;
  const problem = sandboxMoneyProblem(choice.network, currency, connections);
  return problem === null ? choice : { problem };
}

/**
 * The operator's own amount rule, for a connected network (null when the amount is fine, or for BXC and networks with
 * no connector).
 */
export function operatorAmountProblem(
  network: Network,
  currency: string,
  amount: string,
  connections: Connections,
  operation: MoneyOperation = 'collection',
): string | null {
  if (currency === 'BXC' || !connections.connected.has(network.name)) return null;
  return connections.amountProblem?.(network, currency, amount, operation) ?? null;
}

/**
 * The network a request's or a payment's money moves on, by the API's validation rules (`networkForMoney`,
 * `operatorAmountProblem`, then the currency's minor units: `currencyAmountProblem`), with what
 * breaks them as field errors on `phonenumber` and `amount`.
 */
export function moneyNetwork(
  e164: string,
  currency: string,
  amount: string,
  connections: Connections,
  operation: MoneyOperation = 'collection',
): { network: Network | null; errors: Record<string, string[]> } {
  const choice = networkForMoney(e164, currency, connections);
  const errors: Record<string, string[]> = {};
  if (choice.problem !== undefined) errors.phonenumber = [choice.problem];
  const amountProblem =
    (choice.network ? operatorAmountProblem(choice.network, currency, amount, connections, operation) : null) ??
    currencyAmountProblem(currency, amount);
  if (amountProblem !== null) errors.amount = [amountProblem];
  return { network: choice.network ?? null, errors };
}

/**
 * `+256701234567` → `701234567`: the number without its country's calling code (Airtel wants it so); null off the known
 * networks.
 */
export function nationalNumberOf(e164: string): string | null {
  const rule = RULES.find((known) => e164.startsWith(`+${known.countryCode}`));
  return rule ? e164.slice(rule.countryCode.length + 1) : null;
}

export function networkByName(name: string): Network | null {
  if (name === SANDBOX_NETWORK.name) return SANDBOX_NETWORK;
  const found = RULES.find((network) => network.name.toLowerCase() === name.toLowerCase());
  if (!found) return null;
  const { countryCode: _countryCode, prefixes: _prefixes, ...network } = found;
  return network;
}

/**
 * Why `reporter`, authenticated with its own secret, may not report a payment of `amount` in
 * `currency` from `e164`, as field errors; or the network the collection is recorded on. Every
 * report follows the API's money rules (`reportingNetwork`, then the currency's minor units:
 * `currencyAmountProblem`), as a request or a payment does.
 */
export function reportedPaymentNetwork(
  reporter: Network,
  e164: string,
  currency: string,
  amount: string,
  connections: Connections,
): { network: Network; problems?: undefined } | { network?: undefined; problems: Record<string, string[]> } {
  const recorded = reportingNetwork(reporter, e164, currency, connections);
  const amountProblem = currencyAmountProblem(currency, amount);
  if (amountProblem === null) return recorded;
  return { problems: { ...recorded.problems, amount: [amountProblem] } };
}

/**
 * The network a report is recorded on, or why it may not be, as field errors. A real network
 * reports its own country's currency from its own numbers (a connected one reports nothing:
 * `reportsPayments`), and only while the sandbox may simulate it (`sandboxMoneyProblem`: in sandbox
 * mode with no connector on), since money it reports is simulated as the sandbox's is: outside that,
 * nothing vouches for it. The sandbox network reports BXC from any number it serves, and the real
 * currencies of the networks it simulates (`sandboxMoneyProblem`) from their numbers, recorded on
 * that network as the sandbox's own payments are; never a currency of a network with a connector.
 */
function reportingNetwork(
  reporter: Network,
  e164: string,
  currency: string,
  connections: Connections,
): { network: Network; problems?: undefined } | { network?: undefined; problems: Record<string, string[]> } {
  if (reporter.name !== SANDBOX_NETWORK.name) {
    const own: readonly string[] = currenciesOfNetwork(reporter);
    if (!own.includes(currency)) {
      return {
        problems: {
          currency: [
            [
              `${reporter.name} reports payments in`,
              `${own.length > 0 ? own.join(' or ') : 'no currency the service handles'} only.`,
            ].join(' '),
          ],
        },
      };
    }
    if (sandboxMoneyProblem(reporter, currency, connections) !== null) {
      return {
        problems: {
          currency: [
            [
              `${reporter.name} has no connector here: its ${currency} reports are simulated money,`,
              'taken only in sandbox mode while no operator connector is on',
              '(simulated money never shares a wallet with real money).',
            ].join(' '),
          ],
        },
      };
    }
    if (networkForNumber(e164)?.name !== reporter.name)
      return { problems: { phonenumber: [`This number is not on ${reporter.name}.`] } };
    return { network: reporter };
  }
  const choice = networkForCollection(e164, currency, connections.sandboxMode);
  if (choice.problem !== undefined) return { problems: { phonenumber: [choice.problem] } };
  if (currency !== 'BXC' && connections.connected.has(choice.network.name)) {
    return {
      problems: {
        currency: [
          [
            `${choice.network.name} is connected through its operator:`,
            `the sandbox does not report ${currency} payments on it.`,
          ].join(' '),
        ],
      },
    };
  }
  const problem = sandboxMoneyProblem(choice.network, currency, connections);
  return problem === null ? { network: choice.network } : { problems: { currency: [problem] } };
}

/**
 * Whether a network may report payments through the generic report route (`POST /network/payments`):
 * the sandbox and the networks with no connector. A connected network is believed only through its
 * operator's status query, so its reports are refused whoever sends them.
 */
export const reportsPayments = (network: Network, connections: Connections): boolean =>
  !connections.connected.has(network.name);
