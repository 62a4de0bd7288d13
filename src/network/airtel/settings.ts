/** The settings of the Airtel Money connector, declared here and read with the rest of the configuration. */
import * as v from 'valibot';
import { connectorSwitch, httpUrl, secret } from '../../config-values';

export const AIRTEL_VARIABLES = {
  // Airtel Money (Airtel Africa Open API): on when AIRTEL_CLIENT_ID is set; then AIRTEL_CLIENT_SECRET, AIRTEL_COUNTRIES
  // and AIRTEL_PIN are required.
  AIRTEL_BASE_URL: v.optional(httpUrl, 'https://openapi.airtel.africa'),
  AIRTEL_CLIENT_ID: v.optional(secret),
  AIRTEL_CLIENT_SECRET: v.optional(secret),
  AIRTEL_COUNTRIES: v.optional(
    v.pipe(
      v.string(),
      v.regex(
        /^\s*[A-Za-z]{2}(:[A-Za-z]{3})?\s*(,\s*[A-Za-z]{2}(:[A-Za-z]{3})?\s*)*$/,
        'must be country codes such as UG,KE (a currency may follow a colon: CD:CDF)',
      ),
    ),
  ),
  AIRTEL_PIN: v.optional(v.pipe(v.string(), v.regex(/^\d{4,6}$/, 'must be the 4 to 6 digits of the disbursement PIN'))),
  // When set, a callback must carry `hash`: Base64(HMAC-SHA256(key, its transaction object)).
  AIRTEL_CALLBACK_KEY: v.optional(secret),
};

/**
 * The currencies Airtel Money moves in each country this service has Airtel networks in: the
 * first is the country's default, others are named in AIRTEL_COUNTRIES (`CD:CDF`).
 */
const AIRTEL_COUNTRY_CURRENCIES: Readonly<Record<string, readonly string[]>> = {
  UG: ['UGX'],
  KE: ['KES'],
  TZ: ['TZS'],
  RW: ['RWF'],
  CD: ['USD', 'CDF'],
};
/** A country an Airtel deployment serves, with the currency its calls name (X-Currency). */
export type AirtelCountry = { country: string; currency: string };
/** The Airtel Africa Open API (collections, disbursements, refunds, user enquiry). Secrets: never logged or shown. */
export type AirtelSettings = {
  baseUrl: string;
  clientId: string;
  clientSecret: string;
  countries: readonly AirtelCountry[];
  pin: string;
  /** The key Airtel signs its callbacks with (its portal's callback authentication); null: callbacks carry no hash. */
  callbackKey: string | null;
};

/** AIRTEL_COUNTRIES as countries and currencies; what is wrong with it goes to `problems`. */
function airtelCountriesOf(value: string, problems: string[]): AirtelCountry[] {
  const countries: AirtelCountry[] = [];
  for (const entry of value.split(',').map((part) => part.trim().toUpperCase())) {
    const [country = '', named] = entry.split(':');
    const currencies = AIRTEL_COUNTRY_CURRENCIES[country];
    if (!currencies) {
      const served = Object.keys(AIRTEL_COUNTRY_CURRENCIES).join(', ');
      problems.push(`AIRTEL_COUNTRIES: ${country} has no Airtel network this service knows (${served})`);
      continue;
    }
    const currency = named ?? currencies[0]!;
    if (!currencies.includes(currency))
      problems.push(`AIRTEL_COUNTRIES: Airtel Money in ${country} moves ${currencies.join(' or ')}, not ${currency}`);
    else if (countries.some((known) => known.country === country))
      problems.push(`AIRTEL_COUNTRIES: ${country} is named twice`);
    else countries.push({ country, currency });
  }
  return countries;
}

type Values = { [K in keyof typeof AIRTEL_VARIABLES]: v.InferOutput<(typeof AIRTEL_VARIABLES)[K]> };

/** On when AIRTEL_CLIENT_ID is set; then AIRTEL_CLIENT_SECRET, AIRTEL_COUNTRIES and AIRTEL_PIN are required. */
export function readAirtelSettings(c: Values, problems: string[]): AirtelSettings | null {
  if (!connectorSwitch('AIRTEL_CLIENT_ID', c, ['AIRTEL_CLIENT_SECRET', 'AIRTEL_COUNTRIES', 'AIRTEL_PIN'], problems))
    return null;
  return {
    baseUrl: c.AIRTEL_BASE_URL,
    clientId: c.AIRTEL_CLIENT_ID!,
    clientSecret: c.AIRTEL_CLIENT_SECRET!,
    countries: airtelCountriesOf(c.AIRTEL_COUNTRIES ?? '', problems),
    pin: c.AIRTEL_PIN ?? '',
    callbackKey: c.AIRTEL_CALLBACK_KEY ?? null,
  };
}
