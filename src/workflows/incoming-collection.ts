import { condition, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { createCollectionActivities, ReceiptOutcome } from '../activities/collections';
import {
  incomingCollectionStatusQuery,
  type IncomingCollectionInput,
  type IncomingCollectionResult,
  type IncomingPaymentInput,
} from '../contracts/incoming-collection';
import { networkHintSignal } from '../contracts/common';
import { RETRY_POLICIES } from '../contracts/retry-policies';
import { askVerification } from './verification';

type Activities = ReturnType<typeof createCollectionActivities>;

const { receiveCollection, acceptVerifiedCollection } = proxyLocalActivities<Activities>({
  // One PostgreSQL transaction each (then the request's signal).
  startToCloseTimeout: '10 seconds',
  // Money must not be dropped: idempotent, retried through our own outages until it is done.
  retry: RETRY_POLICIES.untilDone,
});

const { rejectCollection } = proxyActivities<Activities>({
  // The rejection goes to the network: a call that leaves the process.
  startToCloseTimeout: '30 seconds',
  retry: RETRY_POLICIES.untilDone,
});

const { checkReportedPayment } = proxyActivities<Activities>({
  // The operator's status query. A few tries, then the next poll asks again.
  startToCloseTimeout: '30 seconds',
  retry: RETRY_POLICIES.statusQuery,
});

/**
 * A payment reported by a callback no prompt of ours names (a paybill payment): asked about at
 * every poll, or when the operator's next callback wakes the workflow, until the operator's status
 * query confirms it (the payment as confirmed) or refuses it, or the time runs out (null).
 */
async function confirmReport(
  input: IncomingCollectionInput & { confirm: NonNullable<IncomingCollectionInput['confirm']> },
  onStatus: (status: string) => void,
): Promise<IncomingPaymentInput | null> {
  let hinted = false;
  setHandler(networkHintSignal, () => {
    hinted = true;
  });
  const giveUpAt = Date.now() + input.confirm.timeoutSeconds * 1000;
  onStatus('confirming');
  for (;;) {
    try {
      const check = await checkReportedPayment(input.payment);
      if (check.status === 'confirmed') return check.payment;
      if (check.status === 'refused') return null;
    } catch {
      // The operator did not answer: asked again at the next poll.
    }
    if (Date.now() >= giveUpAt) return null;
    await condition(() => hinted, Math.min(input.confirm.pollSeconds * 1000, giveUpAt - Date.now()));
    hinted = false;
  }
}

const result = (
  outcome: Exclude<ReceiptOutcome, { outcome: 'verify' }>,
  decidedBy: string | null = null,
): IncomingCollectionResult => ({
  collectionId: outcome.collectionId,
  outcome: outcome.outcome,
  requestId: outcome.requestId,
  decidedBy,
});

/**
 * A payment a network reported on its own (`collection-<network>-<remote id>`): a paybill payment,
 * a report through `POST /network/payments`, the console's sandbox page. (A payment a request's
 * prompt brought in is received by that request's workflow.) One local activity stores it,
 * matches it tenant-safely and, when no verification URL has to answer, credits it and marks its
 * request successful in the same transaction, then tells the request's workflow. Only the
 * merchant's verification URL (and a rejection sent back to the network) are regular activities,
 * as calls that leave the process. An unmatched collection stays unassigned until claimed. A
 * report by callback is believed once the operator's status query confirms it.
 */
export async function incomingCollection(input: IncomingCollectionInput): Promise<IncomingCollectionResult> {
  let status = 'receiving';
  setHandler(incomingCollectionStatusQuery, () => status);
  let payment = input.payment;
  if (input.confirm) {
    const confirmed = await confirmReport({ ...input, confirm: input.confirm }, (next) => {
      status = next;
    });
    if (confirmed === null) {
      status = 'unconfirmed';
      return { collectionId: null, outcome: 'unconfirmed', requestId: null, decidedBy: null };
    }
    payment = confirmed;
    status = 'receiving';
  }
  const receipt = await receiveCollection(payment);
  status = receipt.outcome;
  if (receipt.outcome !== 'verify') return result(receipt, receipt.outcome === 'accepted' ? 'not-asked' : null);

  status = 'verifying';
  const decision = await askVerification(receipt, input.verificationTimeoutSeconds);
  if (decision.decision === 'reject') {
    status = 'rejected';
    await rejectCollection({
      collectionId: receipt.collectionId,
      organizationId: receipt.organizationId,
      reason: decision.reason,
    });
    return {
      collectionId: receipt.collectionId,
      outcome: 'rejected',
      requestId: receipt.requestId,
      decidedBy: decision.decidedBy,
    };
  }
  const accepted = await acceptVerifiedCollection({
    collectionId: receipt.collectionId,
    organizationId: receipt.organizationId,
  });
  status = accepted.outcome;
  if (accepted.outcome === 'verify') throw new Error('a verified collection cannot need verification again');
  return { ...result(accepted, decision.decidedBy), requestId: receipt.requestId };
}
