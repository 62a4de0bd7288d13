/**
 * The secrets the networks' payment callbacks carry (`POST /network/payments`, a bearer token):
 * one per network, only its digest stored; a new one replaces the old.
 */
import { randomBytes } from 'node:crypto';
import { digestKey } from '../../auth/keys';
import type { Queryable } from '../../db';

/** Issues a network's secret (shown once) and keeps its digest, replacing any earlier one. */
export async function issueNetworkSecret(sql: Queryable, network: string): Promise<string> {
  const secret = randomBytes(24).toString('hex');
  await sql`insert into network_credentials (network, digest) values (${network}, ${digestKey(secret)})
            on conflict (network) do update set digest = excluded.digest, created = now()`;
  return secret;
}

/** The network a secret was issued to, or null. */
export async function networkOfSecret(sql: Queryable, secret: string): Promise<string | null> {
  const [credential] = await sql<
    { network: string }[]
  >`select network from network_credentials where digest = ${digestKey(secret)}`;
  return credential?.network ?? null;
}
