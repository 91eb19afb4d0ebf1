/**
 * `loupe eval --cluster CONNECTOR --shards N --run NAME …`: the same eval as a Slurm array job (slurm-ssh
 * connector) or one Ray job per shard (Ray connector; `--remote-workspace` required) through a connector saved in
 * the workspace (Training → Connectors, or `loupe train connectors`), followed to the end in the
 * foreground through the same ClusterSweepService the app's core runs. The shards are merged into the one run NAME
 * of the workspace as they arrive; running the same command again (or opening the app) follows a sweep that is
 * still going from its record instead of submitting it again.
 */
import path from 'node:path';
import type { EvalCliOptions } from './eval';

export interface EvalClusterOptions {
  cluster: string;
  shards?: number;
  clusterLoupe?: string;
  remoteWorkspace?: string;
  clusterCwd?: string;
  clusterCpus?: number;
}

export async function runEvalCluster(o: EvalCliOptions & EvalClusterOptions, io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream } = process): Promise<number> {
  if (!o.run) throw new Error('--cluster needs --run NAME: the run the shards are merged into (the same name follows it again)');
  if (!o.shards) throw new Error('--cluster needs --shards N: how many array tasks to split the samples over');
  if (o.shard) throw new Error('--shard is set per task by --cluster; leave it out');
  const [{ defaultWorkspaceDir, Workspace }, { openWorkspaceSecretStore }, { createTrainingService }, { ClusterSweepService, clusterEvalArgs }, { repoRoot }] = await Promise.all([
    import('../../../app/workspace'),
    import('../../../app/connectors/secrets'),
    import('../../../app/training/service'),
    import('../../../app/sweeps/cluster/service'),
    import('../../core/repoRoot'),
  ]);
  const wsDir = o.workspace ? path.resolve(o.workspace) : defaultWorkspaceDir();
  const ws = new Workspace(wsDir);
  const { store: secrets, info } = await openWorkspaceSecretStore(wsDir);
  const training = createTrainingService({ workspace: wsDir, secrets, secretStore: info, packageRoot: repoRoot() });
  const say = (s: string): void => void io.stderr.write(`${s}\n`);
  const service = new ClusterSweepService({
    workspace: wsDir,
    runs: ws.runs,
    connector: (name) => training.connector(name),
    onEvent: (_run, e) => {
      if (o.progress === false && e.type === 'fetched') return;
      if (e.type === 'submitted') say('arrayId' in e ? `submitted array ${e.arrayId} (shards ${e.shards.join(', ')})` : `shard ${e.shard}: submitted Ray job ${e.jobId}${e.attempt ? ` (submission ${e.attempt + 1})` : ''}`);
      else if (e.type === 'task') say(`shard ${e.shard}: task ${e.taskId} ${e.rawState}`);
      else if (e.type === 'job') say(`shard ${e.shard}: Ray job ${e.jobId} ${e.rawState}`);
      else if (e.type === 'fetched') say(`shard ${e.shard}: ${e.records} more sample(s) copied`);
      else if (e.type === 'resubmitted') say(`shard ${e.shard}: ${e.reason}; submitted again as ${e.taskId}`);
      else if (e.type === 'shard-failed') say(`shard ${e.shard} failed: ${e.reason}`);
      else if (e.type === 'shard-done') say(`shard ${e.shard} done`);
      else say(`warning: ${e.message}`);
    },
  });
  try {
    const resumed = await service.resumeAll();
    if (resumed.includes(o.run)) say(`following cluster sweep ${o.run} from its record (nothing submitted again)`);
    else {
      const extra = [
        ...(o.mode && o.mode !== 'eval' ? ['--mode', o.mode] : []),
        ...(o.seed ? ['--seed', String(o.seed)] : []),
        ...(o.temperature ? ['--temperature', String(o.temperature)] : []),
        ...(o.maxCalls !== undefined ? ['--max-calls', String(o.maxCalls)] : []),
        ...(o.minPixels !== undefined ? ['--min-pixels', String(o.minPixels)] : []),
        ...(o.maxPixels !== undefined ? ['--max-pixels', String(o.maxPixels)] : []),
        ...(o.timeoutMs !== undefined ? ['--timeout-ms', String(o.timeoutMs)] : []),
        ...(o.replayDelayMs !== undefined ? ['--replay-delay-ms', String(o.replayDelayMs)] : []),
        ...(o.retryErrors ? ['--retry-errors'] : []),
      ];
      await service.start({
        connector: o.cluster,
        runName: o.run,
        shards: o.shards,
        evalArgs: [...clusterEvalArgs({ model: o.model, bench: o.bench, data: o.data ?? `data/${o.bench}`, dialect: o.dialect, prompt: o.prompt, ...(o.limit !== undefined ? { limit: o.limit } : {}), ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}), ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}) }), ...extra],
        ...(o.clusterLoupe ? { loupe: o.clusterLoupe.trim().split(/\s+/) } : {}),
        ...(o.remoteWorkspace ? { remoteWorkspace: o.remoteWorkspace } : {}),
        ...(o.clusterCwd ? { cwd: o.clusterCwd } : {}),
        ...(o.clusterCpus ? { cpus: o.clusterCpus } : {}),
      });
    }
    const end = await service.wait(o.run);
    if (!end) throw new Error(`cluster sweep ${o.run} is not running (it ended before; see ${path.join(wsDir, 'cluster-sweeps', o.run, 'job.json')})`);
    const line = { run: o.run, state: end.state, n: end.done, expected: end.total, correct: end.correct, accuracy: end.done ? end.correct / end.done : 0, ...(end.error ? { error: end.error } : {}) };
    if (o.json) io.stdout.write(`${JSON.stringify(line)}\n`);
    else io.stdout.write(`run ${o.run}: ${end.state}, ${end.done}/${end.total} samples, ${end.correct} correct${end.error ? ` (${end.error})` : ''}\n`);
    return end.state === 'done' ? 0 : 1;
  } finally {
    await service.dispose();
    await training.dispose();
  }
}
