/**
 * What the core keeps for the connectors, as one port handed to them (src/network/adapter.ts
 * `NetworkRecords`): a connector and its callback routes are built with this, never with the
 * database, so every write to `network_operations` stays in ./journal.ts and every receipt rule in
 * ./receipts.ts, for every operator alike. An operator whose protocol answers later than its call
 * (Daraja's transaction status, its results by callback) keeps what it asked and what came back here.
 */
import type { Queryable } from '../../db';
import {
  attachReceipt,
  claimResend,
  claimUnanswered,
  forgetOperation,
  markOperationSent,
  markPromptPaid,
  recordOperation,
  setOperatorReference,
  settlePrompt,
  settleRemoteTransactionId,
} from './journal';
import {
  findOperation,
  findOperationByOperatorReference,
  latestStatusQuery,
  operatorReferenceOf,
  unansweredOperationAbout,
} from './operations';
import {
  awaitsReceipt,
  promptRequestOpen,
  pushNamingReceipt,
  receiptHeldElsewhere,
  unsettledPromptFor,
} from './receipts';

/** A function of the database and its arguments, as a function of its arguments over `sql`. */
const over =
  <Args extends unknown[], Result>(sql: Queryable, query: (sql: Queryable, ...args: Args) => Result) =>
  (...args: Args): Result =>
    query(sql, ...args);

export function createNetworkRecords(sql: Queryable) {
  return {
    // Operations: recorded once per (network, reference), found by ours or by the operator's reference.
    recordOperation: over(sql, recordOperation),
    findOperation: over(sql, findOperation),
    findOperationByOperatorReference: over(sql, findOperationByOperatorReference),
    unansweredOperationAbout: over(sql, unansweredOperationAbout),
    claimUnanswered: over(sql, claimUnanswered),
    setOperatorReference: over(sql, setOperatorReference),
    operatorReferenceOf,
    // Sends of an operation the connector keeps itself, paced per window.
    markOperationSent: over(sql, markOperationSent),
    claimResend: over(sql, claimResend),
    forgetOperation: over(sql, forgetOperation),
    // Status queries answered later: the newest about a subject, with the newest answer.
    latestStatusQuery: over(sql, latestStatusQuery),
    // Outcomes and receipts (./receipts.ts).
    settlePrompt: over(sql, settlePrompt),
    markPromptPaid: over(sql, markPromptPaid),
    settleRemoteTransactionId: over(sql, settleRemoteTransactionId),
    awaitsReceipt,
    promptRequestOpen: over(sql, promptRequestOpen),
    pushNamingReceipt: over(sql, pushNamingReceipt),
    receiptHeldElsewhere: over(sql, receiptHeldElsewhere),
    unsettledPromptFor: over(sql, unsettledPromptFor),
    attachReceipt: over(sql, attachReceipt),
  };
}

/** The port a connector and its callback routes keep their records through. */
export type NetworkRecords = ReturnType<typeof createNetworkRecords>;
