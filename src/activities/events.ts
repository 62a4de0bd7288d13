import { log } from '@temporalio/activity';
import type { Sql } from '../db';
import type { EventType } from '../domain/events';
import type { PendingDelivery } from '../services/events';
import { notSetAside, sweepEach } from '../services/sweeps';
import type { Launcher } from '../temporal/launcher';
import type { OutboxSweepInput } from '../workflows/contracts/sweeps';

export type EventActivityDeps = { sql: Sql; launcher: Launcher };

export function createEventActivities({ sql, launcher }: EventActivityDeps) {
  return {
    /** Idempotent: only the first call sets the time (the eventDispatch workflow of events recorded before migration 008). */
    async markEventDispatched(eventId: number): Promise<void> {
      await sql`update events set dispatched_at = now() where id = ${eventId} and dispatched_at is null`;
    },

    /**
     * The outbox sweep's part for deliveries: rows recorded with their events (or asked for as
     * redeliveries) whose workflow nobody started, because the process died after the commit. A
     * row whose start fails for a reason of its own is set aside (sweeps.ts).
     */
    async startPendingDeliveries({ graceSeconds, batchSize }: OutboxSweepInput): Promise<number> {
      const pending = await sql<(PendingDelivery & { eventType: EventType })[]>`
        select d.id, d.workflow_id as "workflowId", d.organization_id as "organizationId", d.webhook_id as "webhookId",
               d.event_id as "eventId", e.type as "eventType", d.redelivery
        from webhook_deliveries d join events e on e.id = d.event_id
        where d.workflow_started_at is null and d.status = 'pending' and d.created < now() - ${graceSeconds}::int * interval '1 second'
          ${notSetAside(sql, 'outbox-delivery', 'd.id')}
        order by d.created limit ${batchSize}`;
      let started = 0;
      const result = await sweepEach(sql, 'outbox-delivery', pending, async (delivery) => {
        if (await launcher.startDelivery(delivery)) started += 1;
        await sql`update webhook_deliveries set workflow_started_at = coalesce(workflow_started_at, now()) where id = ${delivery.id}`;
      }, (delivery, error) => log.error('outbox sweep set a delivery aside', { deliveryId: delivery.id, error: String(error) }));
      if (started > 0 || result.setAside > 0) log.info('outbox sweep started deliveries', { started, setAside: result.setAside, pending: pending.length });
      return started;
    },

    /**
     * The outbox sweep's part for events recorded before migration 008 (their deliveries were not
     * recorded with them) and never dispatched: each gets its eventDispatch workflow. An event whose
     * start fails for a reason of its own is set aside (sweeps.ts).
     */
    async dispatchPendingEvents({ graceSeconds, batchSize }: OutboxSweepInput): Promise<number> {
      const pending = await sql<{ id: number; organizationId: number; type: string }[]>`
        select id, organization_id as "organizationId", type from events
        where dispatched_at is null and created < now() - ${graceSeconds}::int * interval '1 second'
          ${notSetAside(sql, 'outbox-event', 'events.id')}
        order by created limit ${batchSize}`;
      let started = 0;
      const result = await sweepEach(sql, 'outbox-event', pending, async (event) => {
        if (await launcher.startEventDispatch(event)) started += 1;
      }, (event, error) => log.error('outbox sweep set an event aside', { eventId: event.id, error: String(error) }));
      if (started > 0 || result.setAside > 0) log.info('outbox sweep started event dispatches', { started, setAside: result.setAside, pending: pending.length });
      return started;
    },
  };
}
