/**
 * State an app keeps in Rein's Redis (the example's back office): namespaced by app
 * and hash-tagged by tenant, so one tenant's keys share a slot and never another's.
 */
export const appStateKey = (app: string, tenantId: string, name: string) => `rein:app:${app}:{${tenantId}}:${name}`;
