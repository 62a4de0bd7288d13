import { createEventActivities, type EventActivityDeps } from './events';

export type ActivityDeps = EventActivityDeps;

export function createActivities(deps: ActivityDeps) {
  return { ...createEventActivities(deps) };
}
