import postgres from 'postgres';

export type Sql = postgres.Sql;
/** What a helper takes when it may run inside `sql.begin` as well as outside it. */
export type Queryable = postgres.ISql | postgres.Sql | postgres.TransactionSql;

export function createSql(databaseUrl: string, max = 10): Sql {
  return postgres(databaseUrl, {
    max,
    onnotice: () => {},
    // bigint ids and counts come back as JS numbers: ids stay far below 2^53.
    types: {
      bigint: { to: 20, from: [20], serialize: (value: number) => value.toString(), parse: (value: string) => Number(value) },
    },
  });
}
