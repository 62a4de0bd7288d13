/**
 * What the service handles: its currencies (a table, `GET /api/currencies`); the networks are rules in
 * domain/networks.ts.
 */
import type { Queryable } from '../../db';
import type { CurrencyRow } from '../../domain/money-out';

export async function listCurrencies(sql: Queryable): Promise<CurrencyRow[]> {
  return await sql<CurrencyRow[]>`select id, code, name, minor_units as "minorUnits" from currencies order by id`;
}
