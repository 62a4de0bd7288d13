import type { NetworkAdapter } from '../network/adapter';
import { createCollectionRequestActivities, type CollectionRequestActivityDeps } from './collection-requests';
import { createEventActivities, type EventActivityDeps } from './events';

export type ActivityDeps = EventActivityDeps & CollectionRequestActivityDeps & { network: NetworkAdapter };

export function createActivities(deps: ActivityDeps) {
  return { ...createEventActivities(deps), ...createCollectionRequestActivities(deps) };
}
