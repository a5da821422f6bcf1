export { createFakeModel, type FakeTurn, toolCall } from './fake-model.js';
export { startTestCluster, TestCluster, type TestClusterOptions } from './redis-cluster.js';
export { freePort, LocalRedis, startTestRedis, type TestRedis, type TestRedisOptions, waitForPort } from './redis-server.js';
