/** Turn a template's output into a connector JobSpec: extra files travel inside the script as quoted heredocs. */
import type { Connector, JobSpec } from '../connectors/types';
import { q } from './shell';
import type { TemplateOutput } from './types';

export function templateToJobSpec(out: TemplateOutput, opts: { name: string; cwd?: string; kind: Connector['kind']; extraEnv?: Record<string, string> }): JobSpec {
  const parts: string[] = [];
  out.files.forEach((f, i) => {
    if (f.path.startsWith('/') || f.path.split('/').includes('..')) throw new Error(`template file path ${JSON.stringify(f.path)} must be relative and stay inside the job folder`);
    const tag = `LOUPE_FILE_${i}_EOF`;
    if (f.content.split('\n').includes(tag)) throw new Error(`file ${f.path} contains the heredoc terminator ${tag}`);
    const dir = f.path.includes('/') ? f.path.slice(0, f.path.lastIndexOf('/')) : '';
    if (dir) parts.push(`mkdir -p ${q(dir)}`);
    parts.push(`cat > ${q(f.path)} <<'${tag}'\n${f.content.endsWith('\n') ? f.content : `${f.content}\n`}${tag}`);
    if (f.mode) parts.push(`chmod ${f.mode.toString(8)} ${q(f.path)}`);
  });
  const body = `${parts.length ? `${parts.join('\n')}\n` : ''}${out.script}`;
  const env = { ...out.env, ...(opts.extraEnv ?? {}) };
  const spec: JobSpec = {
    name: opts.name,
    script: opts.kind === 'ray' ? `bash -c ${q(`${opts.cwd ? `cd ${q(opts.cwd)} && ` : ''}${body}`)}` : body,
    env,
    resources: out.resources,
    metadata: { template: out.templateId },
  };
  if (opts.cwd && opts.kind !== 'ray') spec.cwd = opts.cwd;
  return spec;
}
