import { Client, Connection, type ClientInterceptors } from '@temporalio/client';

type TemporalSettings = { address: string; namespace: string };

/**
 * A client whose connection is opened on first use, so the API starts (and serves reads) while
 * Temporal is still coming up; events recorded meanwhile are picked up by the outbox sweep.
 */
export function createLazyClient({ address, namespace }: TemporalSettings, interceptors?: ClientInterceptors): Client {
  return new Client({ connection: Connection.lazy({ address }), namespace, interceptors });
}

/** `interceptors`: the tracing ones (src/telemetry/tracing.ts) when tracing is on. */
export async function connectClient(
  { address, namespace }: TemporalSettings,
  interceptors?: ClientInterceptors,
): Promise<Client> {
  return new Client({ connection: await Connection.connect({ address }), namespace, interceptors });
}
