import { randomUUID } from 'node:crypto';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_INSTANCE_ID, ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Config } from '../config.js';
import type { PiiMasker } from '../guards/pii-masker.js';
import type { Logger } from '../logger.js';
import type { CaptureContent } from './genai.js';

/** What a process's tracing is: whether spans are exported, whether contents go with them, and how to flush on exit. */
export interface Tracing {
  enabled: boolean;
  capture?: CaptureContent;
  shutdown(): Promise<void>;
}

const OFF: Tracing = { enabled: false, shutdown: async () => {} };

function sampler(config: Config): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(config.OTEL_TRACES_SAMPLER_ARG);
  switch (config.OTEL_TRACES_SAMPLER) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/** The OTLP/HTTP traces URL: the per-signal endpoint as is, or the base endpoint plus `/v1/traces`. */
function tracesUrl(config: Config): string | undefined {
  if (config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (!config.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined;
  return `${config.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
}

/** What an operator who opted into content capture gets: the payload as JSON, PII masked like a log line. */
export const maskedContent =
  (masker: PiiMasker): CaptureContent =>
  (value) =>
    JSON.stringify(masker.maskDeep(value));

/**
 * Registers the OpenTelemetry SDK for this process when an OTLP endpoint is configured:
 * a batch exporter over OTLP/HTTP (JSON or protobuf), the configured sampler, and
 * AsyncLocalStorage context so spans nest across awaits. Without an endpoint nothing is
 * registered: every span Rein starts is the API's no-op, and the cost is nil.
 */
export function setupTracing(config: Config, service: string, masker: PiiMasker, logger: Logger): Tracing {
  const url = tracesUrl(config);
  if (!url || config.OTEL_SDK_DISABLED === 'true') return OFF;
  const protocol = config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL;
  const exporter = protocol === 'http/json' ? new JsonExporter({ url }) : new ProtobufExporter({ url });
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: config.OTEL_SERVICE_NAME ?? `rein-${service}`,
        [ATTR_SERVICE_INSTANCE_ID]: randomUUID(),
      }),
    );
  const provider = new NodeTracerProvider({
    resource,
    sampler: sampler(config),
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        scheduledDelayMillis: config.OTEL_BSP_SCHEDULE_DELAY,
        exportTimeoutMillis: config.OTEL_BSP_EXPORT_TIMEOUT,
        maxQueueSize: config.OTEL_BSP_MAX_QUEUE_SIZE,
        maxExportBatchSize: config.OTEL_BSP_MAX_EXPORT_BATCH_SIZE,
      }),
    ],
  });
  provider.register();
  logger.info({ url, protocol, sampler: config.OTEL_TRACES_SAMPLER }, 'exporting traces over OTLP');
  return {
    enabled: true,
    ...(config.REIN_OTEL_CAPTURE_CONTENT === 'true' ? { capture: maskedContent(masker) } : {}),
    shutdown: () => provider.shutdown().catch((err: Error) => logger.warn({ err: err.message }, 'could not flush traces')),
  };
}
