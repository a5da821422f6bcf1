export { createFakeModel, type FakeTurn, toolCall } from './fake-model.js';
export { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.js';
export { freePort, LocalRedis, startTestRedis, type TestRedis, type TestRedisOptions, waitForPort } from './redis-server.js';
