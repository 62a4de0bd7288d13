/**
 * The activity of the outbox sweep's earlier shape (`outboxSweepV2`,
 * src/workflows/legacy/outbox-sweep-v2.ts) that the current sweep does not run: its last step.
 */
import type { OutboxSweepInput } from '../../workflows/contracts/sweeps';

export function createOutboxSweepV2Activities() {
  return {
    /**
     * The last step of a sweep of the earlier shape still in flight: it started an `eventDispatch`
     * for each event never dispatched. Migration 024 recorded those events' delivery rows, which
     * the dispatch pool sends, and no event is recorded undispatched since migration 008, so there
     * is none left to start.
     */
    async dispatchPendingEvents(_input: OutboxSweepInput): Promise<number> {
      return 0;
    },
  };
}
