import type { ApiKey } from '@rein/contract';

/** API keys `rein dev` uses when REIN_API_KEYS is unset. Demo only: never deploy these. */
export const DEMO_KEYS: ApiKey[] = [
  { key: 'demo-user-key-zhangsan', tenantId: 'demo', userId: 'zhangsan', roles: ['user'] },
  { key: 'demo-approver-key-lisi', tenantId: 'demo', userId: 'lisi', roles: ['approver'] },
  { key: 'demo-supervisor-key-wangwu', tenantId: 'demo', userId: 'wangwu', roles: ['supervisor'] },
  { key: 'demo-admin-key-admin', tenantId: 'demo', userId: 'admin', roles: ['admin'] },
  // Fleet-wide: app versions and the queue board (`rein versions` calls as this key).
  { key: 'demo-operator-key-ops', tenantId: 'demo', userId: 'ops', roles: ['operator'] },
];
