/**
 * What the fleet knows of its app versions, as a value (store/version-directory.ts reads
 * it, engine/version-route.ts routes by it): the promoted version, the upgrades asked for
 * (`from` → `to`), and the newest version an API process runs (by when it was first seen).
 */
export interface FleetVersions {
  promoted?: string;
  upgrades: Readonly<Record<string, string>>;
  newestApi?: string;
}
