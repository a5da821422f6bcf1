export { createFakeModel, type FakeTurn, toolCall } from './fake-model.js';
export {
  createMcpFixtureServer,
  type FixtureEffect,
  MCP_FIXTURE_MAIN,
  McpFixtureState,
  startMcpFixtureHttp,
} from './mcp-fixture-server.js';
export { MemoryJobQueue, type QueuedJob } from './memory-job-queue.js';
export { createMemoryStores, MemoryEffectLedger, MemoryIdempotencyKeys, MemorySessions } from './memory-ports.js';
export { MemoryRuns } from './memory-runs.js';
export { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.js';
export { hasPostgresBinaries, LocalPostgres, postgresBinDir, startTestPostgres, type TestPostgres } from './postgres-server.js';
export { startTestCluster, TestCluster, type TestClusterOptions } from './redis-cluster.js';
export { freePort, LocalRedis, startTestRedis, type TestRedis, type TestRedisOptions, waitForPort } from './redis-server.js';
