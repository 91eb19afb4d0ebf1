/**
 * Connector latencies: SSH command round trip, Slurm submit→terminal over SSH and via slurmrestd (real services
 * from ci/services-up.sh; rows are skipped when they are not up), Ray follow against the transcript replay,
 * and metric parsing throughput.
 */
import { readFileSync } from 'node:fs';
import { SlurmSshConnector } from '../../app/connectors/slurm';
import { SlurmRestConnector, scontrolTokenProvider } from '../../app/connectors/slurmRest';
import { RayConnector } from '../../app/connectors/ray';
import { MetricStreamParser } from '../../app/training/metrics';
import { loadServicesEnv } from '../integration/connectors/servicesEnv';
import { entry, startRayReplay } from '../integration/connectors/rayReplay';

function stats(ms: number[]): { median_ms: number; min_ms: number; max_ms: number } {
  const s = [...ms].sort((a, b) => a - b);
  return { median_ms: Math.round((s[Math.floor(s.length / 2)] ?? 0) * 10) / 10, min_ms: Math.round((s[0] ?? 0) * 10) / 10, max_ms: Math.round((s[s.length - 1] ?? 0) * 10) / 10 };
}

export async function bench(): Promise<Array<Record<string, string | number>>> {
  const rows: Array<Record<string, string | number>> = [];
  const env = loadServicesEnv();
  if (env) {
    const slurm = new SlurmSshConnector({
      ssh: { host: env.sshHost, port: env.sshPort, username: env.sshUser, privateKey: readFileSync(env.sshKey, 'utf8'), knownHosts: readFileSync(env.knownHosts, 'utf8') },
      remoteDir: `${env.jobsDir}/bench`,
      slurmConf: env.slurmConf,
    });
    let t = performance.now();
    await slurm.ssh.exec('true');
    rows.push({ case: 'ssh connect + first exec', n: 1, ...stats([performance.now() - t]) });
    const ex: number[] = [];
    for (let i = 0; i < 10; i++) {
      t = performance.now();
      await slurm.ssh.exec('true');
      ex.push(performance.now() - t);
    }
    rows.push({ case: 'ssh exec `true` (warm)', n: ex.length, ...stats(ex) });
    const st: number[] = [];
    for (let i = 0; i < 5; i++) {
      t = performance.now();
      await slurm.status('1');
      st.push(performance.now() - t);
    }
    rows.push({ case: 'slurm-ssh status (scontrol)', n: st.length, ...stats(st) });
    const e2e: number[] = [];
    for (let i = 0; i < 3; i++) {
      t = performance.now();
      const { id } = await slurm.submit({ name: 'bench', script: 'echo step:1 - loss:1' });
      await slurm.follow(id, { pollMs: 200 }).done;
      e2e.push(performance.now() - t);
    }
    rows.push({ case: 'slurm-ssh submit→COMPLETED→log (poll 200 ms)', n: e2e.length, ...stats(e2e) });
    await slurm.close();
    const rest = new SlurmRestConnector({ baseUrl: env.restUrl, user: env.restUser, token: scontrolTokenProvider({ username: env.restUser, slurmConf: env.slurmConf }), outputDir: env.jobsDir });
    const r2: number[] = [];
    for (let i = 0; i < 3; i++) {
      t = performance.now();
      const { id } = await rest.submit({ name: 'bench', script: 'echo step:1 - loss:1' });
      await rest.follow(id, { pollMs: 200 }).done;
      r2.push(performance.now() - t);
    }
    rows.push({ case: 'slurmrestd submit→COMPLETED→log (poll 200 ms)', n: r2.length, ...stats(r2) });
  } else {
    rows.push({ case: 'slurm/ssh rows skipped: run ci/services-up.sh', n: 0, median_ms: 0, min_ms: 0, max_ms: 0 });
  }
  const replay = await startRayReplay({ head: 'no-auth', speed: 0.01 });
  try {
    const body = entry('submit_full').request.body as { entrypoint: string; submission_id: string };
    const ray = new RayConnector({ baseUrl: replay.url });
    await ray.submit({ name: 'b', script: body.entrypoint, submissionId: body.submission_id });
    const t = performance.now();
    await ray.follow(body.submission_id, { pollMs: 20 }).done;
    rows.push({ case: 'ray follow via tail WS (replay, 13 s job at 1/100 speed)', n: 1, ...stats([performance.now() - t]) });
  } finally {
    await replay.close();
  }
  const line = 'step:12 - actor/pg_loss:np.float64(-0.01) - critic/score/mean:0.53 - response_length/mean:412.3 - actor/grad_norm:inf - timing_s/gen:12.5\n';
  const text = line.repeat(20000);
  const t = performance.now();
  const n = new MetricStreamParser('auto').push(text).length;
  const ms = performance.now() - t;
  rows.push({ case: `parse verl console lines (auto format), ${n} lines`, n, median_ms: Math.round(ms), min_ms: Math.round(ms), max_ms: Math.round((n / ms) * 1000) });
  rows[rows.length - 1] = { ...rows[rows.length - 1], note: 'max_ms column = lines/s here' };
  return rows;
}
