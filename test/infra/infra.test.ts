import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as keda from '@kubernetes-models/keda/keda.sh/v1alpha1';
import * as apps from 'kubernetes-models/apps/v1';
import * as core from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { findKustomize } from '../support/kustomize.js';

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
const docs = (file: string) => parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJSON());

// The kinds the manifests use, by apiVersion: each model checks an object against the API's schema.
const MODELS: Record<string, Record<string, unknown>> = { v1: core, 'apps/v1': apps, 'keda.sh/v1alpha1': keda };
const validate = (o: { apiVersion: string; kind: string }) => {
  const Model = MODELS[o.apiVersion]?.[o.kind] as (new (data: unknown) => { validate(): void }) | undefined;
  if (!Model) throw new Error(`no model for ${o.apiVersion} ${o.kind}: add it to MODELS`);
  new Model(o).validate();
};
const yamlFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(join(dir, e.name)) : e.name.endsWith('.yaml') ? [join(dir, e.name)] : [],
  );
const kustomizations = yamlFiles(k8s).filter((f) => basename(f) === 'kustomization.yaml');
// What the kustomizations name: files (or folders) taken whole, and patches.
const listed = kustomizations.map((f) => {
  const k = parse(readFileSync(f, 'utf8'));
  const at = (path: string) => join(dirname(f), path);
  return {
    resources: (k.resources ?? []).map(at),
    patches: (k.patches ?? []).flatMap((p: { path?: string }) => (p.path ? [at(p.path)] : [])),
  };
});
// What `kubectl apply -k` takes: infra/k8s itself (no archive) and each overlay.
const deploys = ['.', ...readdirSync(join(k8s, 'overlays')).map((o) => join('overlays', o))];

describe('Kubernetes manifest files', () => {
  const manifests = yamlFiles(k8s).filter((f) => !kustomizations.includes(f));
  const patches = listed.flatMap((l) => l.patches);

  it('are valid Kubernetes objects, each of them (patches aside)', () => {
    const objects = manifests.filter((f) => !patches.includes(f));
    expect(objects.length).toBeGreaterThan(10);
    for (const file of objects)
      for (const o of docs(file)) expect(() => validate(o), `${relative(k8s, file)}: ${o.kind} ${o.metadata?.name}`).not.toThrow();
  });

  it('are each named by a kustomization (none left out)', () => {
    const named = listed.flatMap((l) => [...l.resources, ...l.patches]);
    for (const file of manifests) expect(named, relative(k8s, file)).toContain(file);
  });
});

const kustomize = findKustomize('the Kubernetes manifests as kustomize renders them');

describe.skipIf(!kustomize)('Kubernetes deploys, as kustomize renders them', () => {
  const [command = 'kustomize', ...args] = kustomize ?? [];
  const render = (d: string) =>
    parseAllDocuments(execFileSync(command, [...args, join(k8s, d)], { encoding: 'utf8' })).map((doc) => doc.toJSON());
  const rendered = new Map(kustomize ? deploys.map((d) => [d, render(d)]) : []); // describe.skipIf still collects
  const ofKind = (d: string, kind: string) => (rendered.get(d) ?? []).filter((o) => o.kind === kind);
  const named = (d: string, kind: string, name: string) => ofKind(d, kind).find((o) => o.metadata.name === name);
  const services = (d: string) => ['api', 'worker', 'approver'].map((name) => named(d, 'Deployment', name));
  const archived = (d: string) => d !== '.';

  it('are infra/k8s without the archive, overlays/archive with your PostgreSQL, overlays/archive-trial with one in the cluster', () => {
    expect(deploys).toEqual(['.', join('overlays', 'archive'), join('overlays', 'archive-trial')]);
  });

  it.each(deploys)('%s: valid Kubernetes objects, all in the rein namespace and labelled part of Rein', (d) => {
    for (const o of rendered.get(d) ?? []) {
      expect(() => validate(o), `${o.kind} ${o.metadata.name}`).not.toThrow();
      expect(o.metadata.labels?.['app.kubernetes.io/part-of'], `${o.kind} ${o.metadata.name}`).toBe('rein');
      expect(o.metadata.namespace ?? (o.kind === 'Namespace' ? 'rein' : undefined), `${o.kind} ${o.metadata.name}`).toBe('rein');
    }
  });

  it.each(deploys)('%s: the api, workers and approver, with probes and requests, started by the image’s rein bin', (d) => {
    const names = ofKind(d, 'Deployment').map((o) => o.metadata.name);
    expect(names.sort()).toEqual(['api', 'approver', 'scripted-model', 'worker']);
    for (const o of ofKind(d, 'Deployment')) {
      const [container] = o.spec.template.spec.containers;
      expect(container.image).toBe('rein:latest'); // the kustomization's images: names the app's image
      expect(container.resources.requests, o.metadata.name).toBeDefined();
      expect(container.readinessProbe ?? container.livenessProbe, o.metadata.name).toBeDefined();
    }
    for (const o of services(d)) expect(o.spec.template.spec.containers[0].command, o.metadata.name).toEqual(['rein', o.metadata.name]);
    const serviceNames = ofKind(d, 'Service').map((o) => o.metadata.name);
    expect(serviceNames.sort()).toEqual(
      ['api', 'approver', 'redis', 'scripted-model', ...(d.endsWith('trial') ? ['postgres'] : [])].sort(),
    );
  });

  it.each(deploys)(
    '%s: one app version, its app-version.yaml’s, on every pod, in REIN_APP_VERSION and in the workers’ autoscaling query',
    (d) => {
      const version = parse(readFileSync(join(k8s, d, 'app-version.yaml'), 'utf8')).data.version;
      const [unset] = docs(join(k8s, 'base', 'api.yaml'));
      expect(version).not.toBe(unset.spec.template.metadata.labels['app.kubernetes.io/version']); // the overlay set it
      for (const o of services(d)) {
        expect(o.spec.template.metadata.labels['app.kubernetes.io/version'], o.metadata.name).toBe(version);
        expect(o.spec.template.spec.containers[0].env, o.metadata.name).toContainEqual({
          name: 'REIN_APP_VERSION',
          valueFrom: { fieldRef: { fieldPath: "metadata.labels['app.kubernetes.io/version']" } },
        });
      }
      const [scaled] = ofKind(d, 'ScaledObject');
      expect(scaled.spec.scaleTargetRef.name).toBe('worker');
      expect(scaled.spec.triggers[0].metadata.query).toBe(`max(rein_version_backlog{version="${version}"})`);
      expect(named(d, 'ConfigMap', 'rein-app-version')).toBeUndefined(); // read by kustomize, never applied
    },
  );

  it.each(deploys)(
    '%s: the archive’s URL from the rein-archive Secret, migrated by `rein migrate` before each service starts (archive overlays only)',
    (d) => {
      const url = { name: 'REIN_ARCHIVE_URL', valueFrom: { secretKeyRef: { name: 'rein-archive', key: 'REIN_ARCHIVE_URL' } } };
      for (const o of services(d)) {
        const pod = o.spec.template.spec;
        if (!archived(d)) {
          expect(pod.initContainers, o.metadata.name).toBeUndefined();
          expect(pod.containers[0].env, o.metadata.name).not.toContainEqual(expect.objectContaining({ name: 'REIN_ARCHIVE_URL' }));
          continue;
        }
        expect(pod.containers[0].env, o.metadata.name).toContainEqual(url);
        expect(pod.initContainers, o.metadata.name).toEqual([
          expect.objectContaining({
            name: 'migrate',
            image: pod.containers[0].image,
            command: ['rein', 'migrate'],
            envFrom: pod.containers[0].envFrom,
          }),
        ]);
        expect(pod.initContainers[0].env).toContainEqual(url);
      }
      const secret = named(d, 'Secret', 'rein-archive');
      if (archived(d)) expect(secret.stringData.REIN_ARCHIVE_URL).toMatch(/^postgres:\/\//);
      else expect(secret).toBeUndefined();
    },
  );

  it('overlays/archive-trial: a PostgreSQL in the cluster, at the host, port and password of the archive’s URL', () => {
    const d = join('overlays', 'archive-trial');
    const secret = named(d, 'Secret', 'rein-archive').stringData;
    const url = new URL(secret.REIN_ARCHIVE_URL);
    const service = named(d, 'Service', url.hostname);
    expect(service.spec.ports[0].port).toBe(Number(url.port));
    const [postgres] = named(d, 'StatefulSet', 'postgres').spec.template.spec.containers;
    const env = Object.fromEntries(postgres.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
    expect(env.POSTGRES_USER).toBe(url.username);
    expect(env.POSTGRES_DB).toBe(url.pathname.slice(1));
    expect(postgres.env).toContainEqual({
      name: 'POSTGRES_PASSWORD',
      valueFrom: { secretKeyRef: { name: 'rein-archive', key: 'POSTGRES_PASSWORD' } },
    });
    expect(secret.POSTGRES_PASSWORD).toBe(url.password);
    expect(service.spec.selector).toEqual(named(d, 'StatefulSet', 'postgres').spec.template.metadata.labels);
  });

  it.each(deploys)('%s: every pod as a non-root user, without privilege escalation, capabilities or a writable root filesystem', (d) => {
    const workloads = [...ofKind(d, 'Deployment'), ...ofKind(d, 'StatefulSet')];
    expect(workloads.length).toBe(d.endsWith('trial') ? 6 : 5);
    for (const w of workloads) {
      const pod = w.spec.template.spec;
      expect(pod.securityContext, w.metadata.name).toMatchObject({ runAsNonRoot: true, runAsUser: expect.any(Number) });
      expect(pod.securityContext.runAsUser, w.metadata.name).not.toBe(0);
      for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
        expect(c.securityContext, `${w.metadata.name}/${c.name}`).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
      }
    }
  });

  it('run Redis with AOF and noeviction, its maxmemory below the container limit (writes refused, not the pod killed)', () => {
    const config = named('.', 'ConfigMap', 'redis-config');
    expect(config.data['redis.conf']).toMatch(/appendonly yes/);
    expect(config.data['redis.conf']).toMatch(/maxmemory-policy noeviction/);
    const maxmemory = redisSetting(config.data['redis.conf'], 'maxmemory');
    expect(maxmemory).toBeDefined();
    const [redis] = named('.', 'StatefulSet', 'redis').spec.template.spec.containers;
    expect(bytes(maxmemory as string, 'redis')).toBeLessThan(0.8 * bytes(redis.resources.limits.memory, 'kubernetes'));
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
