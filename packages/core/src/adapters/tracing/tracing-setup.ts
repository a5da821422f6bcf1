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
import type { PiiMasker } from '../../shared/guards/pii-masker.js';
import type { Logger } from '../../shared/logger.js';
import type { ReinOptions } from '../../shared/options.js';
import type { CaptureContent } from './genai.js';

/** What a process's tracing is: whether spans are exported, whether contents go with them, and how to flush on exit. */
export interface Tracing {
  enabled: boolean;
  capture?: CaptureContent;
  shutdown(): Promise<void>;
}

type TracingOptions = ReinOptions['tracing'];

const OFF: Tracing = { enabled: false, shutdown: async () => {} };

function sampler(tracing: TracingOptions): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(tracing.samplerArg);
  switch (tracing.sampler) {
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
function tracesUrl(tracing: TracingOptions): string | undefined {
  if (tracing.tracesEndpoint) return tracing.tracesEndpoint;
  if (!tracing.endpoint) return undefined;
  return `${tracing.endpoint.replace(/\/+$/, '')}/v1/traces`;
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
export function setupTracing(tracing: TracingOptions, service: string, masker: PiiMasker, logger: Logger): Tracing {
  const url = tracesUrl(tracing);
  if (!url || tracing.sdkDisabled === 'true') return OFF;
  const protocol = tracing.tracesProtocol ?? tracing.protocol;
  const exporter = protocol === 'http/json' ? new JsonExporter({ url }) : new ProtobufExporter({ url });
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector] }))
    .merge(
      resourceFromAttributes({
        [ATTR_SERVICE_NAME]: tracing.serviceName ?? `rein-${service}`,
        [ATTR_SERVICE_INSTANCE_ID]: randomUUID(),
      }),
    );
  const provider = new NodeTracerProvider({
    resource,
    sampler: sampler(tracing),
    spanProcessors: [
      new BatchSpanProcessor(exporter, {
        scheduledDelayMillis: tracing.scheduleDelayMs,
        exportTimeoutMillis: tracing.exportTimeoutMs,
        maxQueueSize: tracing.maxQueueSize,
        maxExportBatchSize: tracing.maxExportBatchSize,
      }),
    ],
  });
  provider.register();
  logger.info({ url, protocol, sampler: tracing.sampler }, 'exporting traces over OTLP');
  return {
    enabled: true,
    ...(tracing.captureContent === 'true' ? { capture: maskedContent(masker) } : {}),
    shutdown: () => provider.shutdown().catch((err: Error) => logger.warn({ err: err.message }, 'could not flush traces')),
  };
}
