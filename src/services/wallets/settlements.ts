/**
 * Daily settlement reports (src/domain/settlements.ts): a merchant's own (the API and the console)
 * and the operator's across every organization (the admin CLI), since an operator's statement
 * covers the service's whole till, shortcode or account.
 */
import type { Fragment } from 'postgres';
import * as v from 'valibot';
import type { Queryable } from '../../db';
import { acrossOrganizations } from '../../db/tenancy';
import { fieldErrors } from '../../domain/errors';
import type { OrganizationId } from '../../domain/ids';
import { choiceMessage } from '../../domain/input';
import { listedCodes, SUPPORTED_CURRENCIES } from '../../domain/money';
import {
  MONEY_MOVEMENTS,
  hasReferenceRule,
  movementReference,
  type SettlementKind,
} from '../../domain/money-movements';
import { knownNetworks, networkByName } from '../../domain/networks';
import { SettlementDay, dayOf, nextDay, type Settlement, type SettlementLine } from '../../domain/settlements';
import { tenantScope } from '../platform/queries';

/** The most movements one report lists (a busier day is asked for one network or currency at a time). */
export const SETTLEMENT_MAX_LINES = 100_000;

export const SettlementQuery = v.object({
  date: v.optional(SettlementDay),
  network: v.optional(
    v.pipe(
      v.string(),
      v.description('Only this network (its name, any case: `MTN Uganda`, `Safaricom`, `Sandbox`, …).'),
      v.transform((name) => networkByName(name.trim())?.name ?? name),
      v.picklist(
        knownNetworks().map((network) => network.name),
        choiceMessage,
      ),
    ),
  ),
  currency: v.optional(
    v.pipe(
      v.string(),
      v.description(`Only this currency: ${listedCodes(SUPPORTED_CURRENCIES)}.`),
      v.transform((code) => code.trim().toUpperCase()),
      v.picklist(SUPPORTED_CURRENCIES, choiceMessage),
    ),
  ),
});
type SettlementQueryValues = v.InferOutput<typeof SettlementQuery>;

/** Whose movements: one organization's (a merchant), or every organization's (the operator). */
type SettlementScope = { organizationId: OrganizationId } | { allOrganizations: true };

type Day = { since: Date; until: Date; organization: (alias: string) => Fragment };

/**
 * What finds the operation a line's movement was journaled under (a prompt's, a payout's): its network and
 * our reference. The route is looked up after (`withRoutes`).
 */
const routeKey = (sql: Queryable, network: Fragment, reference: Fragment) => sql`
  ${network} as "routeNetwork", ${reference} as "routeReference"`;

/** What a payment's operation was journaled under: this prefix and the payment's id (`pay-<id>`). */
const PAYMENT_REFERENCE_PREFIX = `${MONEY_MOVEMENTS.payment.settlement.referencePrefix}-`;

type KeyedLine = SettlementLine & { routeNetwork: string | null; routeReference: string | null };

/**
 * Each line with the route of its journaled operation: the one that moved it (the operation not
 * refused under that reference). The operation journal holds every organization's operations and is
 * withheld from the tenant role (migration 030): it is read outside the boundary, for exactly the
 * lines the report already holds, which a merchant's report read inside it.
 */
async function withRoutes(sql: Queryable, lines: KeyedLine[]): Promise<SettlementLine[]> {
  const keys = lines
    .filter((line) => line.routeNetwork !== null && line.routeReference !== null)
    .map((line) => ({ network: line.routeNetwork, reference: line.routeReference }));
  const found =
    keys.length === 0
      ? []
      : await acrossOrganizations(
          sql,
          (outside) => outside<{ network: string; reference: string; route: string | null }[]>`
            select o.network, o.reference, o.route
            from network_operations o
            join jsonb_to_recordset(${outside.json(keys as never)}) as k(network text, reference text)
              on o.network = k.network and o.reference = k.reference
            where o.state <> 'refused'`,
        );
  const routes = new Map(found.map((row) => [`${row.network}\n${row.reference}`, row.route]));
  return lines.map(({ routeNetwork, routeReference, ...line }) => ({
    ...line,
    route: routes.get(`${routeNetwork}\n${routeReference}`) ?? null,
  }));
}

/**
 * Each kind's movements that became final on the day (the rule of src/domain/settlements.ts), as
 * settlement lines (one select each, all with the same columns); the reference of a kind with a
 * reference rule (`pay-<id>`) is filled in after. The compiler asks for one per line type.
 */
const FINAL_MOVEMENTS: { [Type in SettlementKind]: (sql: Queryable, day: Day) => Fragment } = {
  collection: (sql, { since, until, organization }) => sql`
    select c.network, c.currency, 'collection' as type, c.id, c.organization_id as "organizationId",
           c.remote_transaction_id as "operatorTransactionId", c.prompt_reference as reference,
           null::text as "originalTransactionId", null::text as route,
           ${routeKey(sql, sql`c.network`, sql`c.prompt_reference`)},
           c.amount::text as amount, c.phone_number as "phoneNumber", t.created as "finalAt"
    from transactions t join collections c on c.id = t.collection_id
    where t.type = 'mobile_collection' and t.created >= ${since} and t.created < ${until} ${organization('c')}`,
  payment: (sql, { since, until, organization }) => sql`
    select p.network, p.currency, 'payment' as type, p.id, p.organization_id as "organizationId",
           p.remote_transaction_id as "operatorTransactionId", null::text as reference,
           null::text as "originalTransactionId", null::text as route,
           ${routeKey(sql, sql`p.network`, sql`${PAYMENT_REFERENCE_PREFIX} || p.id`)},
           p.amount::text as amount, p.phone_number as "phoneNumber", p.modified as "finalAt"
    from payments p
    where p.state = 'completed' and p.modified >= ${since} and p.modified < ${until} ${organization('p')}`,
  reversal: (sql, { since, until, organization }) => sql`
    select r.network, r.currency, 'reversal' as type, r.id, r.organization_id as "organizationId",
           r.remote_transaction_id as "operatorTransactionId", null::text as reference,
           c.remote_transaction_id as "originalTransactionId", null::text as route,
           ${routeKey(sql, sql`c.network`, sql`c.prompt_reference`)},
           r.amount::text as amount, r.phone_number as "phoneNumber", r.modified as "finalAt"
    from reversals r join collections c on c.id = r.collection_id
    where r.state = 'completed' and r.modified >= ${since} and r.modified < ${until} ${organization('r')}`,
};

const withReference = (line: SettlementLine): SettlementLine =>
  hasReferenceRule(line.type) ? { ...line, reference: movementReference(line.type, line.id) } : line;

/**
 * The report of one UTC day (default: today, so far). Each line's time is the moment it became
 * final (the rule of src/domain/settlements.ts): a collection's credit transaction, a payment's or
 * reversal's change to `completed`. Read in one statement, so one snapshot.
 */
export async function settlementReport(
  sql: Queryable,
  scope: SettlementScope,
  query: SettlementQueryValues,
): Promise<Settlement> {
  const asOf = (await sql<{ now: Date }[]>`select clock_timestamp() as now`)[0]!.now;
  const since = query.date ?? dayOf(asOf);
  const until = new Date(Math.max(since.getTime(), Math.min(nextDay(since).getTime(), asOf.getTime())));
  // The operator's report (`allOrganizations`) runs across every organization; a merchant's is scoped to its own.
  const organization = (alias: string) =>
    'organizationId' in scope ? sql`and ${tenantScope(sql, scope.organizationId).owned(alias)}` : sql``;
  const movements = Object.values(FINAL_MOVEMENTS).map((select) => select(sql, { since, until, organization }));
  const lines = await sql<KeyedLine[]>`
    select * from (${movements.reduce((union, part) => sql`${union} union all ${part}`)}) movements
    where true
      ${query.network === undefined ? sql`` : sql`and network = ${query.network}`}
      ${query.currency === undefined ? sql`` : sql`and currency = ${query.currency}`}
    order by network, currency, "finalAt", type, id
    limit ${SETTLEMENT_MAX_LINES + 1}`;
  if (lines.length > SETTLEMENT_MAX_LINES) {
    throw fieldErrors({
      date: [
        [
          `The day holds more than ${SETTLEMENT_MAX_LINES} movements; a report lists at most that:`,
          'ask for one network or currency at a time.',
        ].join(' '),
      ],
    });
  }
  return {
    day: since,
    since,
    until,
    asOf,
    network: query.network ?? null,
    currency: query.currency ?? null,
    lines: (await withRoutes(sql, lines)).map(withReference),
  };
}
