import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

const infra = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'infra');
const k8s = join(infra, 'k8s');
const docs = (file: string) => parseAllDocuments(readFileSync(join(k8s, file), 'utf8')).map((d) => d.toJSON());

describe('Kubernetes manifests', () => {
  const kustomization = parse(readFileSync(join(k8s, 'kustomization.yaml'), 'utf8'));
  const all = (kustomization.resources as string[]).flatMap((file) => {
    expect(existsSync(join(k8s, file)), file).toBe(true);
    return docs(file);
  });
  const deployments = all.filter((d) => d.kind === 'Deployment');

  it('deploy the api, workers and approver with probes and resource requests', () => {
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(['api', 'approver', 'scripted-model', 'worker']);
    for (const d of deployments) {
      const [container] = d.spec.template.spec.containers;
      expect(container.image).toBe('rein');
      expect(container.resources.requests, d.metadata.name).toBeDefined();
      expect(container.readinessProbe ?? container.livenessProbe, d.metadata.name).toBeDefined();
    }
    expect(
      all
        .filter((d) => d.kind === 'Service')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(['api', 'approver', 'redis', 'scripted-model']);
  });

  it('autoscale workers with KEDA on waiting + prioritized + active steps, not on the wait list alone', () => {
    const scaled = all.find((d) => d.kind === 'ScaledObject');
    expect(scaled.spec.scaleTargetRef.name).toBe('worker');
    expect(scaled.spec.triggers[0].metadata.query).toBe(
      'sum(max by (state, shard) (rein_queue_jobs{state=~"waiting|prioritized|active"}))',
    );
  });

  it('run Redis with AOF and noeviction', () => {
    const config = all.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'redis-config');
    expect(config.data['redis.conf']).toMatch(/appendonly yes/);
    expect(config.data['redis.conf']).toMatch(/maxmemory-policy noeviction/);
  });
});

describe('docker compose', () => {
  const compose = parse(readFileSync(join(infra, 'docker-compose.yml'), 'utf8'), { merge: true });

  it('runs redis, api, a scalable worker, approver, the scripted model, prometheus, grafana and jaeger', () => {
    expect(Object.keys(compose.services).sort()).toEqual([
      'api',
      'approver',
      'grafana',
      'jaeger',
      'model',
      'prometheus',
      'redis',
      'worker',
    ]);
    expect(compose.services.worker.ports).toBeUndefined(); // no fixed host port: `--scale worker=N` works
    expect(compose.services.worker.command).toEqual(['node', 'services/worker/dist/main.js']);
    expect(compose.services.grafana.volumes).toContain('./grafana/dashboards:/var/lib/grafana/dashboards:ro');
    expect(readFileSync(join(infra, 'redis', 'redis.conf'), 'utf8')).toMatch(/maxmemory-policy noeviction/);
  });

  it('sends every service’s traces to Jaeger over OTLP/HTTP, under its default service name', () => {
    expect(compose.services.jaeger.environment.COLLECTOR_OTLP_ENABLED).toBe('true');
    for (const name of ['api', 'worker', 'approver']) {
      const env = compose.services[name].environment;
      expect(env.OTEL_EXPORTER_OTLP_ENDPOINT, name).toMatch(/^\$\{OTEL_EXPORTER_OTLP_ENDPOINT:-http:\/\/jaeger:4318\}$/);
      expect(env.OTEL_EXPORTER_OTLP_PROTOCOL, name).toMatch(/http\/(protobuf|json)/);
      expect(env.OTEL_SERVICE_NAME, name).toBeUndefined(); // rein-api / rein-worker / rein-approver
    }
  });
});

describe('Grafana and traces', () => {
  const jaeger = parse(readFileSync(join(infra, 'grafana', 'provisioning', 'datasources', 'jaeger.yml'), 'utf8')).datasources[0];
  const dashboard = (f: string) => JSON.parse(readFileSync(join(infra, 'grafana', 'dashboards', f), 'utf8'));

  it('provisions Jaeger as a data source', () => {
    expect(jaeger).toMatchObject({ type: 'jaeger', uid: 'rein-jaeger', url: 'http://jaeger:16686' });
  });

  it('links every dashboard to the runs’ traces, and the fleet overview to one run by its traceId', () => {
    const explorePane = (url: string) => JSON.parse(decodeURIComponent(new URL(url, 'http://grafana').searchParams.get('panes') ?? '')).a;
    for (const f of ['fleet-overview.json', 'approvals.json', 'model.json', 'tools.json']) {
      const [search] = dashboard(f).links;
      expect(explorePane(search.url), f).toMatchObject({ datasource: jaeger.uid, queries: [{ queryType: 'search', service: 'rein-api' }] });
    }
    const overview = dashboard('fleet-overview.json');
    expect(overview.templating.list).toContainEqual(expect.objectContaining({ name: 'trace_id', type: 'textbox' }));
    expect(explorePane(overview.links[1].url).queries[0].query).toMatch(/^\$\{trace_id\}$/);
  });

  it('shows 0, not "No data", on the panels of counters that exist only once something went wrong', () => {
    const panels = ['fleet-overview.json', 'model.json', 'tools.json'].flatMap(
      (f) => dashboard(f).panels as Array<{ title: string; targets?: Array<{ expr: string }> }>,
    );
    const titled = (title: string) => panels.find((p) => p.title.startsWith(title))?.targets?.[0]?.expr;
    expect(titled('Stops by budgets, quotas and loop breakers')).toMatch(/ or vector\(0\)$/);
    for (const counter of [
      'rein_step_delays_total',
      'rein_reaper_repairs_total',
      'rein_breaker_events_total',
      'rein_effects_uncertain_total',
    ])
      expect(panels.flatMap((p) => p.targets ?? []).find((t) => t.expr.includes(counter))?.expr, counter).toMatch(/ or vector\(0\)$/);
  });
});
