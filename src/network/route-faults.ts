/** How the core reads what went wrong on a route (./routes.ts): in a few words, and whose it was. */
import { isDatabaseUnavailable } from '../db';
import type { Network } from '../domain/networks';
import { neverSent, OperatorUnreachableError } from './operator-http';

/** A route fault in a few words, for the journal, the health table and operators. */
export function faultOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (neverSent(error) ? `connection refused: ${message}` : message).slice(0, 300);
}

/** Whether an error is the route's (the operator's answer or silence) rather than our own database's. */
export const routeError = (error: unknown) =>
  error instanceof OperatorUnreachableError || !isDatabaseUnavailable(error);

/** What a merchant reads when no route of a network would take an operation. */
export const unavailable = (network: Network, fault: string | null) => {
  const why = fault ? ` (${fault})` : '';
  return `${network.name} is unavailable on every route right now${why}; nothing was sent, try again later.`;
};
