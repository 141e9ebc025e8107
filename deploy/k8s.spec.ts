import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../src/config/app-config.js';

/**
 * The Kubernetes manifests of deploy/k8s, rendered as an operator renders them
 * (`kubectl kustomize`, no cluster), checked against what production needs.
 * scripts/ensure-test-packages.sh installs kubectl where it is missing.
 */

const run = promisify(execFile);
const BASE = fileURLToPath(new URL('k8s', import.meta.url));

type Labels = Record<string, string>;
interface LabelSelector {
  matchLabels?: Labels;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}
interface SecretKeyRef {
  name: string;
  key: string;
}
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: SecretKeyRef; configMapKeyRef?: { name: string; key: string }; fieldRef?: unknown };
}
interface HttpProbe {
  httpGet?: { path: string; port: string | number };
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
}
interface SecurityContext {
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  runAsNonRoot?: boolean;
  runAsUser?: number;
  capabilities?: { drop?: string[]; add?: string[] };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  startupProbe?: HttpProbe;
  livenessProbe?: HttpProbe;
  readinessProbe?: HttpProbe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: SecurityContext;
}
interface Volume {
  name: string;
  emptyDir?: { sizeLimit?: string; medium?: string };
  secret?: { secretName: string; items?: { key: string; path: string }[]; defaultMode?: number };
  configMap?: { name: string };
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  automountServiceAccountToken?: boolean;
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    runAsGroup?: number;
    fsGroup?: number;
    seccompProfile?: { type: string };
  };
  topologySpreadConstraints?: { maxSkew: number; topologyKey: string; whenUnsatisfiable: string; labelSelector: LabelSelector }[];
  affinity?: {
    podAntiAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: { topologyKey: string; labelSelector: LabelSelector }[];
      preferredDuringSchedulingIgnoredDuringExecution?: { podAffinityTerm: { topologyKey: string; labelSelector: LabelSelector } }[];
    };
  };
}
interface PodTemplate {
  metadata: { labels?: Labels; annotations?: Record<string, string> };
  spec: PodSpec;
}
interface K8sObject<Spec = unknown> {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Labels; annotations?: Record<string, string> };
  spec: Spec;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}
type Deployment = K8sObject<{
  replicas: number;
  selector: LabelSelector;
  strategy?: { type: string; rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string } };
  template: PodTemplate;
}>;
type Job = K8sObject<{ backoffLimit?: number; ttlSecondsAfterFinished?: number; activeDeadlineSeconds?: number; template: PodTemplate }>;
type Service = K8sObject<{
  type?: string;
  selector: Labels;
  ports: { name?: string; port: number; targetPort: string | number; protocol?: string }[];
}>;
type Hpa = K8sObject<{
  scaleTargetRef: { apiVersion: string; kind: string; name: string };
  minReplicas: number;
  maxReplicas: number;
  metrics: { type: string; resource?: { name: string; target: { type: string; averageUtilization?: number } } }[];
}>;
type Pdb = K8sObject<{ selector: LabelSelector; minAvailable?: number | string; maxUnavailable?: number | string }>;

/** Whether a label selector selects a set of labels (the Kubernetes semantics). */
function selects(selector: LabelSelector, labels: Labels = {}): boolean {
  const matchLabels = Object.entries(selector.matchLabels ?? {});
  const expressions = selector.matchExpressions ?? [];
  if (matchLabels.length === 0 && expressions.length === 0) return false; // an empty selector is refused here on purpose
  return (
    matchLabels.every(([key, value]) => labels[key] === value) &&
    expressions.every((e) => {
      const has = Object.hasOwn(labels, e.key);
      switch (e.operator) {
        case 'In':
          return has && (e.values ?? []).includes(labels[e.key]);
        case 'NotIn':
          return !has || !(e.values ?? []).includes(labels[e.key]);
        case 'Exists':
          return has;
        case 'DoesNotExist':
          return !has;
      }
    })
  );
}

async function render(dir: string): Promise<{ text: string; objects: K8sObject[] }> {
  const { stdout } = await run('kubectl', ['kustomize', dir], { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
  const documents = parseAllDocuments(stdout);
  if (!Array.isArray(documents)) throw new Error('kubectl kustomize printed no YAML documents');
  for (const document of documents) {
    if (document.errors.length > 0) throw new Error(`unparsable YAML: ${document.errors.map((e) => e.message).join('; ')}`);
  }
  return { text: stdout, objects: documents.map((document) => document.toJS() as K8sObject).filter(Boolean) };
}

/** The effective environment of a container: the ConfigMap (envFrom) overlaid with `env`. */
function environment(container: Container, configMaps: Map<string, Record<string, string>>): Map<string, EnvVar> {
  const env = new Map<string, EnvVar>();
  for (const source of container.envFrom ?? []) {
    const name = source.configMapRef?.name;
    if (!name) continue;
    const data = configMaps.get(name);
    if (!data) throw new Error(`envFrom names the ConfigMap ${name}, which the manifests do not contain`);
    for (const [key, value] of Object.entries(data)) env.set(key, { name: key, value });
  }
  for (const variable of container.env ?? []) env.set(variable.name, variable);
  return env;
}

const SECRET_SETTINGS = ['DATABASE_URL', 'REDIS_URL', 'API_KEY_HASH_KEY', 'PAGE_TOKEN_KEY'];
const SECRETS = 'results-service-secrets';
const SIGNING_KEYS = 'results-service-signing-keys';

describe('the Kubernetes manifests (kubectl kustomize deploy/k8s)', () => {
  let text: string;
  let objects: K8sObject[];
  let deployment: Deployment;
  let job: Job;
  let configMaps: Map<string, Record<string, string>>;

  const one = <T extends K8sObject>(kind: string, name: string): T => {
    const found = objects.filter((o) => o.kind === kind && o.metadata.name === name);
    expect(found).toHaveLength(1);
    return found[0] as T;
  };
  const container = (template: PodTemplate): Container => {
    expect(template.spec.containers).toHaveLength(1);
    return template.spec.containers[0];
  };

  beforeAll(async () => {
    ({ text, objects } = await render(BASE));
    deployment = one<Deployment>('Deployment', 'results-service');
    job = one<Job>('Job', 'results-service-migrate');
    configMaps = new Map(objects.filter((o) => o.kind === 'ConfigMap').map((o) => [o.metadata.name, o.data ?? {}]));
  });

  it('holds exactly the Deployment, Service, HPA, PDB, ConfigMap and migration Job, and leaves the namespace to overlays', () => {
    expect(objects.map((o) => `${o.apiVersion} ${o.kind} ${o.metadata.name}`).sort()).toEqual([
      'apps/v1 Deployment results-service',
      'autoscaling/v2 HorizontalPodAutoscaler results-service',
      'batch/v1 Job results-service-migrate',
      'policy/v1 PodDisruptionBudget results-service',
      'v1 ConfigMap results-service-config',
      'v1 Service results-service',
    ]);
    for (const o of objects) {
      expect(o.metadata.namespace).toBeUndefined();
      expect(o.metadata.labels).toMatchObject({ 'app.kubernetes.io/name': 'results-service' });
    }
  });

  it('contains no secret values: secrets are only referenced, from the two operator-made Secrets', () => {
    expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
    expect(text).not.toMatch(/stringData|BEGIN [A-Z ]*PRIVATE KEY|postgres(ql)?:\/\/|rediss?:\/\//);
    const referenced = new Set<string>();
    for (const template of [deployment.spec.template, job.spec.template]) {
      const c = container(template);
      for (const variable of c.env ?? []) {
        if (SECRET_SETTINGS.includes(variable.name) || /(KEYS?|SECRET|PASSWORD|TOKEN)$/.test(variable.name)) {
          expect(variable.value).toBeUndefined();
          expect(variable.valueFrom?.secretKeyRef).toBeDefined();
        }
        if (variable.valueFrom?.secretKeyRef) referenced.add(variable.valueFrom.secretKeyRef.name);
      }
      for (const source of c.envFrom ?? []) if (source.secretRef) referenced.add(source.secretRef.name);
      for (const volume of template.spec.volumes ?? []) if (volume.secret) referenced.add(volume.secret.secretName);
    }
    expect([...referenced].sort()).toEqual([SECRETS, SIGNING_KEYS]);
    for (const data of configMaps.values()) {
      for (const key of Object.keys(data)) expect(SECRET_SETTINGS).not.toContain(key);
    }
  });

  it('configures production in the ConfigMap: no demo seed, no migrations at start, values the service accepts', () => {
    const data = configMaps.get('results-service-config')!;
    expect(data).toMatchObject({
      PORT: '3000',
      METRICS_PORT: '9464',
      SEED_DEMO: 'false',
      MIGRATIONS_RUN: 'false',
      IMAGE_STORAGE: 'database',
      RATE_LIMIT_PER_MINUTE: '60',
      TOKEN_RATE_LIMIT_PER_MINUTE: '10',
      UPLOADS_IN_FLIGHT_MB: '64',
      UPLOADS_STALL_SECONDS: '30',
      UPLOADS_MIN_KB_PER_SECOND: '8',
      TRUST_PROXY: '1',
      CORS_ORIGINS: '',
      SHUTDOWN_GRACE_SECONDS: '25',
    });
    expect(data.DATA_DIR).toMatch(/^\/tmp\//);
    for (const key of ['HOST', 'DATABASE_SCHEMA', 'DATABASE_POOL_SIZE', 'PUBLIC_BASE_URL', 'RESULTS_TIMEZONE', 'LOG_LEVEL', 'AUTH_CACHE_SECONDS']) {
      expect(data[key]).toEqual(expect.any(String));
    }
    // The service validates the very same values (with stand-ins for the secrets) ...
    const config = loadConfig({
      ...data,
      DATABASE_URL: 'postgres://user@db.invalid:5432/results',
      REDIS_URL: 'redis://cache.invalid:6379',
      API_KEY_HASH_KEY: 'x'.repeat(32),
      PAGE_TOKEN_KEY: 'y'.repeat(32),
    });
    expect(config).toMatchObject({ SEED_DEMO: false, MIGRATIONS_RUN: false, PORT: 3000, METRICS_PORT: 9464 });
    // ... and every key is one of its settings (a misspelt name would be silently ignored).
    const settings = config as unknown as Record<string, unknown>;
    for (const [key, value] of Object.entries(data)) {
      if (key === 'NODE_ENV' || value === '') continue;
      expect(`${key}=${String(settings[key])}`).toBe(`${key}=${value}`);
    }
  });

  it('runs 3 replicas of the image, with the http and metrics ports and the settings from the ConfigMap and Secrets', () => {
    expect(deployment.spec.replicas).toBe(3);
    expect(selects(deployment.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
    expect(deployment.spec.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    const c = container(deployment.spec.template);
    expect(c.image).toBe('results-service:latest');
    expect(c.command).toBeUndefined(); // the image's CMD: node dist/main.js
    expect(c.ports).toEqual([
      { name: 'http', containerPort: 3000, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9464, protocol: 'TCP' },
    ]);
    const env = environment(c, configMaps);
    expect(env.get('SEED_DEMO')).toEqual({ name: 'SEED_DEMO', value: 'false' });
    expect(env.get('MIGRATIONS_RUN')).toEqual({ name: 'MIGRATIONS_RUN', value: 'false' });
    expect(env.get('PORT')?.value).toBe('3000');
    expect(env.get('METRICS_PORT')?.value).toBe('9464');
    for (const name of SECRET_SETTINGS) {
      expect(env.get(name)).toEqual({ name, valueFrom: { secretKeyRef: { name: SECRETS, key: name } } });
    }
    // Set in the Secret only while PAGE_TOKEN_KEY is being changed: pods start without it.
    expect(env.get('PAGE_TOKEN_ACCEPTED_KEYS')).toEqual({
      name: 'PAGE_TOKEN_ACCEPTED_KEYS',
      valueFrom: { secretKeyRef: { name: SECRETS, key: 'PAGE_TOKEN_ACCEPTED_KEYS', optional: true } },
    });
  });

  it('mounts the signing keys read-only from their Secret and points JWT_SIGNING_KEYS_FILE at the file', () => {
    const c = container(deployment.spec.template);
    const file = environment(c, configMaps).get('JWT_SIGNING_KEYS_FILE')?.value;
    const volume = deployment.spec.template.spec.volumes?.find((v) => v.secret?.secretName === SIGNING_KEYS);
    expect(volume).toBeDefined();
    const mount = c.volumeMounts?.find((m) => m.name === volume!.name);
    expect(mount?.readOnly).toBe(true);
    const item = volume!.secret!.items?.[0];
    expect(item).toBeDefined();
    expect(file).toBe(`${mount!.mountPath}/${item!.path}`);
    expect(volume!.secret!.defaultMode).toBe(0o440);
  });

  it('probes liveness on /health/live, readiness on /health/ready and startup on the http port', () => {
    const c = container(deployment.spec.template);
    expect(c.livenessProbe?.httpGet).toEqual({ path: '/health/live', port: 'http' });
    expect(c.readinessProbe?.httpGet).toEqual({ path: '/health/ready', port: 'http' });
    expect(c.startupProbe?.httpGet).toEqual({ path: '/health/live', port: 'http' });
    // Readiness answers within its 2 s check timeout; the probe waits longer than that.
    expect(c.readinessProbe?.timeoutSeconds).toBeGreaterThan(2);
    // The startup probe allows a minute of boot before liveness may restart the pod.
    expect((c.startupProbe?.periodSeconds ?? 10) * (c.startupProbe?.failureThreshold ?? 3)).toBeGreaterThanOrEqual(60);
  });

  it('sets resource requests and limits', () => {
    expect(container(deployment.spec.template).resources).toEqual({
      requests: { cpu: '250m', memory: '384Mi' },
      limits: { cpu: '1', memory: '768Mi' },
    });
    expect(container(job.spec.template).resources).toEqual({
      requests: { cpu: '100m', memory: '256Mi' },
      limits: { cpu: '1', memory: '512Mi' },
    });
  });

  it('runs as the node user, non-root, read-only root filesystem, no privilege escalation, no capabilities', () => {
    for (const template of [deployment.spec.template, job.spec.template]) {
      expect(template.spec.securityContext).toEqual({
        runAsNonRoot: true,
        runAsUser: 1000,
        runAsGroup: 1000,
        fsGroup: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(container(template).securityContext).toEqual({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        privileged: false,
        capabilities: { drop: ['ALL'] },
      });
      expect(template.spec.automountServiceAccountToken).toBe(false);
      // The only writable place is an emptyDir at /tmp, where DATA_DIR is.
      const c = container(template);
      const tmp = c.volumeMounts?.find((m) => m.mountPath === '/tmp');
      expect(template.spec.volumes?.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
      for (const mount of c.volumeMounts ?? []) {
        const volume = template.spec.volumes?.find((v) => v.name === mount.name);
        if (!volume?.emptyDir) expect(mount.readOnly).toBe(true);
      }
      expect(environment(c, configMaps).get('DATA_DIR')?.value).toMatch(/^\/tmp\//);
    }
  });

  it('drains before it is killed: preStop sleep, then SIGTERM with time for SHUTDOWN_GRACE_SECONDS', () => {
    const c = container(deployment.spec.template);
    expect(c.lifecycle?.preStop?.exec?.command).toEqual(['sleep', '5']);
    const grace = Number(environment(c, configMaps).get('SHUTDOWN_GRACE_SECONDS')?.value);
    expect(grace).toBe(25);
    const kill = deployment.spec.template.spec.terminationGracePeriodSeconds;
    expect(kill).toBe(40);
    // The kubelet counts the preStop hook inside the grace period: SIGKILL comes after both.
    expect(kill).toBeGreaterThan(5 + grace);
  });

  it('spreads the replicas across nodes', () => {
    const spread = deployment.spec.template.spec.topologySpreadConstraints ?? [];
    const byNode = spread.find((s) => s.topologyKey === 'kubernetes.io/hostname');
    expect(byNode).toMatchObject({ maxSkew: 1, whenUnsatisfiable: 'DoNotSchedule' });
    expect(selects(byNode!.labelSelector, deployment.spec.template.metadata.labels)).toBe(true);
  });

  it('lets Prometheus scrape the metrics port', () => {
    expect(deployment.spec.template.metadata.annotations).toEqual({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '9464',
      'prometheus.io/path': '/metrics',
    });
  });

  it('serves port 80 of a ClusterIP Service from the http port of the Deployment pods only', () => {
    const service = one<Service>('Service', 'results-service');
    expect(service.spec.type).toBe('ClusterIP');
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(selects({ matchLabels: service.spec.selector }, deployment.spec.template.metadata.labels)).toBe(true);
    // The migration pods share the app labels but never receive traffic.
    expect(selects({ matchLabels: service.spec.selector }, job.spec.template.metadata.labels)).toBe(false);
  });

  it('autoscales the Deployment from 3 to 10 replicas at 70% CPU', () => {
    const hpa = one<Hpa>('HorizontalPodAutoscaler', 'results-service');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name });
    expect(hpa.spec.minReplicas).toBe(3);
    expect(hpa.spec.maxReplicas).toBe(10);
    expect(hpa.spec.metrics).toEqual([
      { type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } },
    ]);
    // The HPA scales the Deployment's selector: the pods it counts are the template's.
    expect(selects(deployment.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
    expect(selects(deployment.spec.selector, job.spec.template.metadata.labels)).toBe(false);
  });

  it('keeps all but one replica through voluntary disruptions', () => {
    const pdb = one<Pdb>('PodDisruptionBudget', 'results-service');
    expect(pdb.spec.maxUnavailable).toBe(1);
    expect(pdb.spec.minAvailable).toBeUndefined();
    expect(selects(pdb.spec.selector, deployment.spec.template.metadata.labels)).toBe(true);
    expect(selects(pdb.spec.selector, job.spec.template.metadata.labels)).toBe(false);
  });

  it('migrates with a Job: same image, config, secret and security, `node dist/cli.js migrations run`', () => {
    const c = container(job.spec.template);
    const app = container(deployment.spec.template);
    expect(c.command).toEqual(['node', 'dist/cli.js', 'migrations', 'run']);
    expect(c.args).toBeUndefined();
    expect(c.image).toBe(app.image);
    expect(c.envFrom).toEqual(app.envFrom);
    expect(environment(c, configMaps).get('DATABASE_URL')).toEqual({
      name: 'DATABASE_URL',
      valueFrom: { secretKeyRef: { name: SECRETS, key: 'DATABASE_URL' } },
    });
    expect(job.spec.template.spec.restartPolicy).toBe('Never');
    expect(job.spec.backoffLimit).toBe(3);
    expect(job.spec.ttlSecondsAfterFinished).toBe(86400);
    expect(job.spec.activeDeadlineSeconds).toBe(900);
    expect(job.spec.template.spec.securityContext).toEqual(deployment.spec.template.spec.securityContext);
    expect(c.securityContext).toEqual(app.securityContext);
  });

  it('takes the image and namespace from an overlay', async () => {
    const overlay = mkdtempSync(join(tmpdir(), 'results-overlay-'));
    try {
      // `bases` (not `resources`) so that the kustomize 2 of Debian 12's kubectl reads it too.
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        [
          'namespace: results-prod',
          'bases:',
          `  - ${relative(overlay, BASE)}`,
          'images:',
          '  - name: results-service',
          '    newName: registry.example.com/results-service',
          '    newTag: "1.2.3"',
          '',
        ].join('\n'),
      );
      const rendered = (await render(overlay)).objects;
      expect(rendered).toHaveLength(objects.length);
      for (const o of rendered) expect(o.metadata.namespace).toBe('results-prod');
      const images = rendered
        .filter((o): o is Deployment | Job => o.kind === 'Deployment' || o.kind === 'Job')
        .map((o) => (o as Deployment).spec.template.spec.containers[0].image);
      expect(images).toEqual(['registry.example.com/results-service:1.2.3', 'registry.example.com/results-service:1.2.3']);
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  });
});
