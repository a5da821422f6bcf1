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
  it('runs redis, api, a scalable worker, approver, the scripted model, prometheus and grafana', () => {
    const compose = parse(readFileSync(join(infra, 'docker-compose.yml'), 'utf8'), { merge: true });
    expect(Object.keys(compose.services).sort()).toEqual(['api', 'approver', 'grafana', 'model', 'prometheus', 'redis', 'worker']);
    expect(compose.services.worker.ports).toBeUndefined(); // no fixed host port: `--scale worker=N` works
    expect(compose.services.worker.command).toEqual(['node', 'services/worker/dist/main.js']);
    expect(compose.services.grafana.volumes).toContain('./grafana/dashboards:/var/lib/grafana/dashboards:ro');
    expect(readFileSync(join(infra, 'redis', 'redis.conf'), 'utf8')).toMatch(/maxmemory-policy noeviction/);
  });
});
