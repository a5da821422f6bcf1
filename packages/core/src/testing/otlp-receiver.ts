import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One received span, flattened: ids in hex, attributes as plain values, plus its resource's attributes. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

type Fields = Map<number, Array<Buffer | number | bigint>>;

/** Decodes one protobuf message into its fields (wire types 0, 1, 2, 5): enough for OTLP traces. */
function fields(buf: Buffer): Fields {
  const out: Fields = new Map();
  let at = 0;
  const varint = () => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buf[at++] as number;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const [no, wire] = [key >> 3, key & 7];
    const take = (n: number) => {
      at += n;
      return buf.subarray(at - n, at);
    };
    let value: Buffer | number | bigint;
    if (wire === 0) value = varint();
    else if (wire === 1) value = take(8);
    else if (wire === 2) value = take(Number(varint()));
    else if (wire === 5) value = take(4);
    else throw new Error(`unsupported protobuf wire type ${wire}`);
    out.set(no, [...(out.get(no) ?? []), value]);
  }
  return out;
}
const bytes = (f: Fields, no: number) => (f.get(no) ?? []) as Buffer[];
const str = (f: Fields, no: number) => bytes(f, no)[0]?.toString('utf8') ?? '';

function anyValue(f: Fields): unknown {
  if (f.has(1)) return str(f, 1);
  if (f.has(2)) return f.get(2)?.[0] === 1n;
  if (f.has(3)) return Number(f.get(3)?.[0]);
  if (f.has(4)) return bytes(f, 4)[0]?.readDoubleLE(0);
  if (f.has(5)) return bytes(fields(bytes(f, 5)[0] as Buffer), 1).map((v) => anyValue(fields(v)));
  return null;
}
const protoAttributes = (list: Buffer[]) =>
  Object.fromEntries(list.map((kv) => fields(kv)).map((kv) => [str(kv, 1), anyValue(fields(bytes(kv, 2)[0] ?? Buffer.alloc(0)))]));

function fromProtobuf(body: Buffer): ReceivedSpan[] {
  return bytes(fields(body), 1).flatMap((rsBuf) => {
    const rs = fields(rsBuf);
    const resource = protoAttributes(bytes(fields(bytes(rs, 1)[0] ?? Buffer.alloc(0)), 1));
    return bytes(rs, 2).flatMap((ss) =>
      bytes(fields(ss), 2).map((spanBuf) => {
        const s = fields(spanBuf);
        return {
          traceId: bytes(s, 1)[0]?.toString('hex') ?? '',
          spanId: bytes(s, 2)[0]?.toString('hex') ?? '',
          parentSpanId: bytes(s, 4)[0]?.toString('hex') ?? '',
          name: str(s, 5),
          kind: Number(s.get(6)?.[0] ?? 0),
          attributes: protoAttributes(bytes(s, 9)),
          resource,
        };
      }),
    );
  });
}

interface JsonValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: JsonValue[] };
}
const jsonValue = (v: JsonValue): unknown =>
  v.stringValue ??
  v.boolValue ??
  (v.intValue !== undefined ? Number(v.intValue) : (v.doubleValue ?? v.arrayValue?.values?.map(jsonValue) ?? null));
const jsonAttributes = (list: Array<{ key: string; value: JsonValue }> = []) =>
  Object.fromEntries(list.map((a) => [a.key, jsonValue(a.value)]));

function fromJson(body: Buffer): ReceivedSpan[] {
  const req = JSON.parse(body.toString('utf8')) as {
    resourceSpans?: Array<{
      resource?: { attributes?: Array<{ key: string; value: JsonValue }> };
      scopeSpans?: Array<{
        spans?: Array<{
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          attributes?: Array<{ key: string; value: JsonValue }>;
        }>;
      }>;
    }>;
  };
  return (req.resourceSpans ?? []).flatMap((rs) =>
    (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        resource: jsonAttributes(rs.resource?.attributes),
      })),
    ),
  );
}

/**
 * An in-process OTLP/HTTP traces receiver for tests: accepts `POST /v1/traces` as
 * http/json or http/protobuf and keeps every span, with the encoding each request used.
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const encodings: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      const body = Buffer.concat(chunks);
      const json = (req.headers['content-type'] ?? '').includes('json');
      encodings.push(json ? 'json' : 'protobuf');
      spans.push(...(json ? fromJson(body) : fromProtobuf(body)));
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    /** The base endpoint, as OTEL_EXPORTER_OTLP_ENDPOINT. */
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    encodings,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
export type OtlpReceiver = Awaited<ReturnType<typeof startOtlpReceiver>>;
