import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

const infra = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'infra');
const k8s = join(infra, 'k8s');
// Memory sizes in each tool's own units.
const UNITS = {
  redis: { '': 1, k: 1e3, kb: 2 ** 10, m: 1e6, mb: 2 ** 20, g: 1e9, gb: 2 ** 30 },
  kubernetes: { '': 1, K: 1e3, Ki: 2 ** 10, M: 1e6, Mi: 2 ** 20, G: 1e9, Gi: 2 ** 30 },
  docker: { '': 1, b: 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 },
} as const;
const bytes = (size: string, tool: keyof typeof UNITS) => {
  const match = /^(\d+)([a-zA-Z]*)$/.exec(size.trim());
  const unit = tool === 'kubernetes' ? match?.[2] : match?.[2]?.toLowerCase();
  const factor = (UNITS[tool] as Record<string, number>)[unit ?? ''];
  if (!match || factor === undefined) throw new Error(`not a ${tool} size: ${size}`);
  return Number(match[1]) * factor;
};
const redisSetting = (conf: string, name: string) => new RegExp(`^${name}\\s+(\\S+)`, 'm').exec(conf)?.[1];
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
      expect(container.image).toBe('rein'); // kustomization.yaml's images: names the app's image
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

  it('run Redis with AOF and noeviction, its maxmemory below the container limit (writes refused, not the pod killed)', () => {
    const config = all.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'redis-config');
    expect(config.data['redis.conf']).toMatch(/appendonly yes/);
    expect(config.data['redis.conf']).toMatch(/maxmemory-policy noeviction/);
    const maxmemory = redisSetting(config.data['redis.conf'], 'maxmemory');
    expect(maxmemory).toBeDefined();
    const [redis] = all.find((d) => d.kind === 'StatefulSet' && d.metadata.name === 'redis').spec.template.spec.containers;
    expect(bytes(maxmemory as string, 'redis')).toBeLessThan(0.8 * bytes(redis.resources.limits.memory, 'kubernetes'));
  });

  it('run every pod as a non-root user, without privilege escalation, capabilities or a writable root filesystem', () => {
    const workloads = all.filter((d) => d.kind === 'Deployment' || d.kind === 'StatefulSet');
    expect(workloads.length).toBe(5);
    for (const w of workloads) {
      const pod = w.spec.template.spec;
      expect(pod.securityContext, w.metadata.name).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number) });
      expect(pod.securityContext.runAsUser, w.metadata.name).not.toBe(0);
      for (const c of pod.containers) {
        expect(c.securityContext, `${w.metadata.name}/${c.name}`).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
      }
    }
  });

  it('start the stock services with the image’s rein bin, so an app image FROM Rein’s runs the same commands', () => {
    for (const d of deployments.filter((d) => d.metadata.name !== 'scripted-model')) {
      expect(d.spec.template.spec.containers[0].command, d.metadata.name).toEqual(['rein', d.metadata.name]);
    }
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
      'migrate',
      'model',
      'postgres',
      'prometheus',
      'redis',
      'worker',
    ]);
    expect(compose.services.worker.ports).toBeUndefined(); // no fixed host port: `--scale worker=N` works
    expect(compose.services.worker.command).toEqual(['rein', 'worker']);
    expect(compose.services.api.image).toMatch(/^\$\{REIN_IMAGE:-rein:local\}$/); // the app's image, Rein's by default
    expect(compose.services.grafana.volumes).toContain('./grafana/dashboards:/var/lib/grafana/dashboards:ro');
    const conf = readFileSync(join(infra, 'redis', 'redis.conf'), 'utf8');
    expect(conf).toMatch(/maxmemory-policy noeviction/);
    expect(bytes(redisSetting(conf, 'maxmemory') as string, 'redis')).toBeLessThan(0.8 * bytes(compose.services.redis.mem_limit, 'docker'));
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

  it('provisions the run archive (PostgreSQL) as a data source, migrated before any service starts', () => {
    const archive = parse(readFileSync(join(infra, 'grafana', 'provisioning', 'datasources', 'postgres.yml'), 'utf8')).datasources[0];
    expect(archive).toMatchObject({ type: 'grafana-postgresql-datasource', uid: 'rein-archive', url: 'postgres:5432' });
    const compose = parse(readFileSync(join(infra, 'docker-compose.yml'), 'utf8'), { merge: true });
    expect(compose.services.migrate.command).toEqual(['rein', 'migrate']);
    for (const name of ['api', 'worker', 'approver'])
      expect(compose.services[name].depends_on.migrate, name).toEqual({ condition: 'service_completed_successfully' });
  });

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

describe('the images', () => {
  const base = readFileSync(join(infra, 'Dockerfile'), 'utf8');
  const app = readFileSync(join(infra, 'app.Dockerfile'), 'utf8');

  it('build on the current Node LTS, and run as the unprivileged node user', () => {
    expect([...base.matchAll(/^FROM (\S+)/gm)].map((m) => m[1])).toEqual(['node:24-slim', 'node:24-slim']);
    const lastUser = (dockerfile: string) => [...dockerfile.matchAll(/^USER (\S+)$/gm)].at(-1)?.[1];
    expect(lastUser(base)).toBe('node');
    expect(lastUser(app)).toBe('node');
  });

  it('assemble Rein’s image with the script the app-image test runs, and let an app image set only REIN_APP on top', () => {
    expect(base).toMatch(/^RUN .*node scripts\/assemble-image\.mjs \/app$/m);
    expect(base).toMatch(/^WORKDIR \/app$/m);
    expect(app).toMatch(/^FROM \$\{REIN_IMAGE\}$/m);
    expect(app).toMatch(/^ENV REIN_APP=\.\/app\/app\.mjs$/m);
  });
});
