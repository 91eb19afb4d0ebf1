import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalConnector } from '../connectors/local';
import { templateToJobSpec } from './jobSpec';
import { MetricSeries, MetricStreamParser } from './metrics';
import { msSwiftVsiPluginSource, mra, vsiReward } from './rewards';
import { buildTemplate, TEMPLATES, TemplateParamsError, templateDefaults } from './templates';
import type { TemplateOutput } from './types';
import { describeIf } from '../../tests/support/requirements';
import { findPythonSync } from '../workspace/python';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-templates-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const required: Record<string, Record<string, unknown>> = {
  'verl-tool-pixel-reasoner-grpo': {},
  'pixel-reasoner-curiosity-rl': { trainver: '/data/pr/train.parquet', testver: '/data/pr/test.parquet' },
  'ms-swift-grpo-vsibench': { dataset: '/data/vsi/train.jsonl' },
  'deepeyes-grpo': {},
  'pyvision-rl-grpo': { modelPath: '/ckpt/qwen25vl-7b-sft', trainFiles: ['/data/deepeyes_vs', '/data/minio3_vs'] },
  'llm-judge-server': {},
  'loupe-tiny-finetune': {},
};

function bashSyntaxOk(script: string): string {
  const r = spawnSync('bash', ['-n'], { input: script, encoding: 'utf8' });
  return r.status === 0 ? 'ok' : r.stderr;
}

describe('templates', () => {
  it('every template builds from defaults into bash that parses', () => {
    for (const t of TEMPLATES) {
      const out = buildTemplate(t.id, required[t.id]);
      expect(out.templateId).toBe(t.id);
      expect(bashSyntaxOk(out.script)).toBe('ok');
      for (const s of out.services) expect(bashSyntaxOk(s.script)).toBe('ok');
      const spec = templateToJobSpec(out, { name: 'x', kind: 'slurm-ssh' });
      expect(bashSyntaxOk(spec.script)).toBe('ok');
      const ray = templateToJobSpec(out, { name: 'x', kind: 'ray', cwd: '/w' });
      expect(bashSyntaxOk(ray.script)).toBe('ok');
      expect(ray.script.startsWith('bash -c ')).toBe(true);
    }
  });

  it('verl-tool: data prep with filter_len, tool server, GRPO overrides from the seeds, file logger', () => {
    const out = buildTemplate('verl-tool-pixel-reasoner-grpo', {});
    expect(out.script).toContain('python examples/data_preprocess/pixel_reasoner/prepare_train.py');
    expect(out.script).toContain('--filter_len=8192');
    expect(out.script).toContain('--version=max_8192');
    expect(out.script).toContain('data/pixel_reasoner/PixelReasoner_RL_Data/max_8192/train.parquet');
    expect(out.script).toContain('--tool_type pixel_reasoner --workers_per_tool 4');
    for (const s of ['algorithm.adv_estimator=grpo', 'actor_rollout_ref.rollout.n=8', 'data.train_batch_size=128', 'actor_rollout_ref.actor.optim.lr=1e-6', 'actor_rollout_ref.agent.max_turns=3', 'reward_model.reward_manager=pixel_reasoner', 'actor_rollout_ref.model.path=TIGER-Lab/PixelReasoner-WarmStart', "trainer.logger=['console','file']"]) {
      expect(out.script).toContain(s);
    }
    expect(out.metrics).toEqual({ format: 'verl-jsonl', file: expect.stringMatching(/^loupe_metrics\/pixel_reasoner\/.+\.jsonl$/) });
    const noFilter = buildTemplate('verl-tool-pixel-reasoner-grpo', { dataPrep: { filterLen: null } });
    expect(noFilter.script).not.toContain('--filter_len');
  });

  it('validation messages name the field and the rule', () => {
    const err = (() => {
      try {
        buildTemplate('verl-tool-pixel-reasoner-grpo', { batchSize: 100, ppoMiniBatchSize: 64, n: 1, tensorModelParallelSize: 3 });
      } catch (e) {
        return e as TemplateParamsError;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(TemplateParamsError);
    const byPath = Object.fromEntries((err?.issues ?? []).map((i) => [i.path, i.message]));
    expect(byPath.ppoMiniBatchSize).toBe('ppoMiniBatchSize (64) must divide batchSize (100)');
    expect(byPath.n).toMatch(/GRPO needs n ≥ 2/);
    expect(byPath.tensorModelParallelSize).toMatch(/must divide nGpusPerNode \(8\)/);
    expect(() => buildTemplate('pixel-reasoner-curiosity-rl', {})).toThrow(/trainver/);
    expect(() => buildTemplate('ms-swift-grpo-vsibench', { dataset: 'd.jsonl', numGenerations: 7 })).toThrow(/must be divisible by numGenerations \(7\)/);
    expect(() => buildTemplate('nope', {})).toThrow(/unknown training template "nope"/);
    expect(templateDefaults('deepeyes-grpo')).toMatchObject({ judgePort: 18901, judgeModel: 'Qwen/Qwen2.5-72B-Instruct' });
  });


  it('a misspelled parameter is an error that lists the valid names (not dropped for the default)', () => {
    const issues = (id: string, params: Record<string, unknown>) => {
      try {
        buildTemplate(id, params);
      } catch (e) {
        return (e as TemplateParamsError).issues;
      }
      return [];
    };
    const top = issues('verl-tool-pixel-reasoner-grpo', { modle: 'Qwen/Qwen2.5-VL-7B-Instruct' });
    expect(top).toHaveLength(1);
    expect(top[0]?.path).toBe('');
    expect(top[0]?.message).toMatch(/^unknown parameter "modle"; valid: repoDir, dataPrep, trainFiles, valFiles, model, /);
    const nested = issues('verl-tool-pixel-reasoner-grpo', { dataPrep: { filterlen: 100 } });
    expect(nested[0]).toMatchObject({ path: 'dataPrep', message: expect.stringMatching(/unknown parameter "filterlen"; valid: .*filterLen/) });
    for (const t of TEMPLATES) expect(issues(t.id, { ...(t.id === 'ms-swift-grpo-vsibench' ? { dataset: 'd' } : {}), zzz: 1 }).some((i) => /unknown parameter "zzz"/.test(i.message))).toBe(true);
  });

  it('a judge host is a host name, not shell text; paths refuse control characters', () => {
    expect(() => buildTemplate('deepeyes-grpo', { judgeHost: '$(id>/tmp/x)' })).toThrow(/judgeHost: a host name or IP address/);
    expect(buildTemplate('deepeyes-grpo', { judgeHost: 'judge-0.cluster.local' }).env.LLM_AS_A_JUDGE_BASE).toBe('http://judge-0.cluster.local:18901/v1');
    expect(buildTemplate('deepeyes-grpo', { judgeHost: '[::1]' }).env.LLM_AS_A_JUDGE_BASE).toBe('http://[::1]:18901/v1');
    expect(() => buildTemplate('verl-tool-pixel-reasoner-grpo', { model: 'a\nb' })).toThrow(/model: the value must be one line without control characters/);
  });
  it('Pixel Reasoner: the generated wrapper really patches train_vlm_multi.sh and passes the env vars', () => {
    const repo = path.join(tmp, 'pr');
    mkdirSync(path.join(repo, 'scripts'), { recursive: true });
    // The lines of the upstream script that the wrapper must patch (TIGER-AI-Lab/Pixel-Reasoner curiosity_driven_rl/scripts/train_vlm_multi.sh).
    writeFileSync(
      path.join(repo, 'scripts', 'train_vlm_multi.sh'),
      [
        'working_dir=/path/to/workdir',
        'export WANDB_API_KEY=""',
        'bsz=${bsz:-"512"}',
        'rbuffer=${bsz:-"1024"}',
        'DATASET=/path/to/train.parquet',
        'testdata="/path/to/test.parquet"',
        'echo "DATASET=$DATASET testdata=$testdata rbuffer=$rbuffer bsz=$bsz wd=$working_dir lr=${lr}e-7 sys=$sys MAX_PIXELS=$MAX_PIXELS filter=$filter algo=$algo key=$WANDB_API_KEY"',
      ].join('\n'),
    );
    const out = buildTemplate('pixel-reasoner-curiosity-rl', { ...required['pixel-reasoner-curiosity-rl'], repoDir: repo, workDir: '/ckpt/work' });
    const stdout = execFileSync('bash', ['-c', out.script], { encoding: 'utf8', env: { ...process.env, WANDB_API_KEY: 'k123' } });
    expect(stdout.trim()).toBe('DATASET=/data/pr/train.parquet testdata=/data/pr/test.parquet rbuffer=512 bsz=256 wd=/ckpt/work lr=10e-7 sys=vcot MAX_PIXELS=4014080 filter=True algo=group key=k123');
  });

  it('the generated wrapper refuses to run when the upstream script changed shape', () => {
    const repo = path.join(tmp, 'pr2');
    mkdirSync(path.join(repo, 'scripts'), { recursive: true });
    writeFileSync(path.join(repo, 'scripts', 'train_vlm_multi.sh'), 'echo started\n');
    const out = buildTemplate('pixel-reasoner-curiosity-rl', { ...required['pixel-reasoner-curiosity-rl'], repoDir: repo });
    const r = spawnSync('bash', ['-c', out.script], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/could not patch DATASET/);
    expect(r.stdout).not.toContain('started');
  });

  it('DeepEyes: judge service + env; ms-swift: swift rlhf with the plugin and reward funcs', () => {
    const de = buildTemplate('deepeyes-grpo', { worldSize: 2 });
    expect(de.services[0]?.script).toMatch(/vllm serve Qwen\/Qwen2\.5-72B-Instruct[\s\S]*--port 18901[\s\S]*--served-model-name judge/);
    expect(de.env).toEqual({ LLM_AS_A_JUDGE_BASE: 'http://127.0.0.1:18901/v1', WORLD_SIZE: '2' });
    expect(de.script).toContain('bash examples/agent/final_merged_v1v8_thinklite.sh');
    expect(de.notes.join(' ')).toMatch(/16 GPUs requested; DeepEyes recommends ≥ 32/);
    const ms = buildTemplate('ms-swift-grpo-vsibench', { dataset: '/d/vsi.jsonl', rewardFuncs: ['vsi_mra', 'format'] });
    expect(ms.script).toMatch(/swift rlhf[\s\S]*--rlhf_type grpo[\s\S]*--external_plugins loupe_plugins\/vsi_mra_plugin\.py[\s\S]*--reward_funcs vsi_mra format[\s\S]*--num_generations 12[\s\S]*--beta 0[\s\S]*--temperature 0\.9[\s\S]*--max_completion_length 2048/);
    expect(ms.env.MAX_PIXELS).toBe('602112');
    expect(ms.files[0]?.content).toContain("orms['vsi_mra'] = VsiMra");
  });
});

const py = findPythonSync('json');

describeIf(!!py, { what: 'python3', reason: 'not on PATH; npm test installs Debian\'s python3', provisioned: true }, 'ms-swift VSI plugin (real Python) agrees with the TypeScript reward', () => {
  it('same rewards on the same completions', () => {
    const dir = path.join(tmp, 'swiftstub');
    // A stand-in for ms-swift's registry so the generated plugin imports without ms-swift installed.
    mkdirSync(path.join(dir, 'swift', 'plugin'), { recursive: true });
    writeFileSync(path.join(dir, 'swift', '__init__.py'), '');
    writeFileSync(path.join(dir, 'swift', 'plugin', '__init__.py'), 'class ORM:\n    pass\norms = {}\n');
    writeFileSync(path.join(dir, 'vsi_plugin.py'), msSwiftVsiPluginSource());
    const cases: Array<[string, string, string | null]> = [
      ['<answer>3</answer>', '3', 'object_counting'],
      ['<think>..</think><answer>about 2.85 meters</answer>', '3.0', 'object_abs_distance'],
      ['The answer is \\boxed{4.2}', '4', 'room_size_estimation'],
      ['<answer>10</answer>', '4', 'object_counting'],
      ['no number here', '4', 'object_counting'],
      ['<answer>0</answer>', '0', 'object_counting'],
      ['<answer>1</answer>', '0', 'object_counting'],
      ['<answer>B. left</answer>', 'B', 'object_rel_direction_easy'],
      ['<answer>b.</answer>', 'B', 'route_planning'],
      ['<answer>C</answer>', 'B', 'obj_appearance_order'],
      ['A', 'A', null],
      ['<answer>-.5</answer>', '-0.5', 'object_abs_distance'],
      ['<answer>1.05</answer>', '1', 'object_size_estimation'],
      ['<answer>0.95</answer>', '1', 'object_size_estimation'],
      ['<answer>1.5</answer>', '1', 'object_size_estimation'],
    ];
    const code = `import json,sys\nsys.path.insert(0, ${JSON.stringify(dir)})\nimport vsi_plugin\nfrom swift.plugin import orms\ncases=json.loads(sys.stdin.read())\nf=orms['vsi_mra']()\nprint(json.dumps([f([c],[s],question_type=[q])[0] for c,s,q in cases]))`;
    const pyOut = JSON.parse(execFileSync(py as string, ['-c', code], { input: JSON.stringify(cases), encoding: 'utf8' })) as number[];
    const ts = cases.map(([c, s, qt]) => vsiReward(c, s, qt));
    expect(pyOut).toEqual(ts);
    // Spot values from the definition, computed by hand.
    expect(ts[0]).toBe(1);
    expect(ts[1]).toBe(1); // rel 0.0499… ≤ 1−0.95
    expect(ts[2]).toBe(1); // rel and 1−0.95 both round to 0.050000000000000044: the last threshold passes
    expect(mra(4.6, 4)).toBe(0.8); // rel 0.15 → θ ∈ {0.50…0.85}
    expect(ts[3]).toBe(0);
    expect(ts[12]).toBe(1);
    expect(ts[14]).toBe(0.1); // rel 0.5 → only θ=0.50
  });
});

describe('templates through the local connector', () => {
  it('files travel as heredocs; a template script runs and its step lines parse', async () => {
    const local = new LocalConnector({ root: path.join(tmp, 'jobs') });
    const out: TemplateOutput = {
      ...buildTemplate('loupe-tiny-finetune', {}),
      script: 'for s in 1 2 3; do echo "step:$s - loss:0.$((9 - s)) - lr:$LOUPE_LR - epochs:$LOUPE_EPOCHS"; done; cat plug/a.txt\n',
      env: { LOUPE_LR: '1e-4', LOUPE_EPOCHS: '2' },
    };
    out.files.push({ path: 'plug/a.txt', content: "line with 'quotes' and $NOT_EXPANDED\n" });
    const spec = templateToJobSpec(out, { name: 'tiny', kind: 'local', cwd: tmp });
    const { id } = await local.submit(spec);
    const series = new MetricSeries(0);
    const parser = new MetricStreamParser(out.metrics.format);
    let text = '';
    const res = await local.follow(id, { pollMs: 30, onText: (t) => ((text += t), series.addAll(parser.push(t))) }).done;
    expect(res.status.state).toBe('succeeded');
    expect(series.get('loss').values).toEqual([0.8, 0.7, 0.6]);
    expect(series.get('lr').values).toEqual([1e-4, 1e-4, 1e-4]);
    expect(series.get('epochs').values).toEqual([2, 2, 2]);
    expect(text).toContain("line with 'quotes' and $NOT_EXPANDED");
    expect(() => templateToJobSpec({ ...out, files: [{ path: '../x', content: '' }] }, { name: 'x', kind: 'local' })).toThrow(/must be relative/);
  });
});

const REPO = path.resolve(__dirname, '..', '..');

describe('loupe-tiny local fine-tune template', () => {
  it('defaults are sized for a CPU demo and call the driver with the trainer flags', () => {
    const out = buildTemplate('loupe-tiny-finetune', {});
    expect(out.metrics).toEqual({ format: 'verl-console' });
    expect(out.script).toContain('loupe_dir="${LOUPE_REPO:?');
    expect(out.script).toContain('bash "$loupe_dir"/models/loupe-tiny/finetune.sh');
    for (const a of ['--init "$loupe_dir"/models/loupe-tiny/model', '--out "$PWD/model"', '--seed 4000', '--scenes 24', '--work data', '--device cpu', '--max-steps 20', '--bs 4', '--lr 3e-4', '--val-every 10', '--log-every 1', '--export none']) {
      expect(out.script).toContain(a);
    }
    expect(out.script).not.toContain('--minutes');
    expect(out.script).not.toContain('--data');
    // recipe, reading and trainArgs at their defaults add nothing: the script is the one from before they existed
    expect(out.script).not.toMatch(/--recipe|--reading|--train-args/);
    expect(out.script).toBe(
      [
        'set -euo pipefail',
        '# The Loupe checkout whose synth, prepare.ts and train.py run (Loupe sets LOUPE_REPO for local jobs).',
        'loupe_dir="${LOUPE_REPO:?set LOUPE_REPO to a Loupe checkout on the machine that runs this job}"',
        'bash "$loupe_dir"/models/loupe-tiny/finetune.sh \\',
        '    --init "$loupe_dir"/models/loupe-tiny/model \\',
        '    --out "$PWD/model" \\',
        '    --seed 4000 \\',
        '    --scenes 24 \\',
        '    --work data \\',
        '    --device cpu \\',
        '    --max-steps 20 \\',
        '    --bs 4 \\',
        '    --lr 3e-4 \\',
        '    --val-every 10 \\',
        '    --log-every 1 \\',
        '    --export none',
        '',
      ].join('\n'),
    );
    expect(templateDefaults('loupe-tiny-finetune')).toMatchObject({ recipe: 'plain', reading: false });
    expect(templateDefaults('loupe-tiny-finetune')).not.toHaveProperty('trainArgs');
  });

  it('recipe grounded, reading and trainArgs reach the driver (only when not the default)', () => {
    const all = buildTemplate('loupe-tiny-finetune', { recipe: 'grounded', reading: true, trainArgs: '  --aux-read 5   --crop-eval=0 --lr-note a.b,c_d ' }).script;
    expect(all).toMatch(/--export none \\\n {4}--recipe grounded \\\n {4}--reading 1 \\\n {4}--train-args '--aux-read 5 --crop-eval=0 --lr-note a\.b,c_d'\n$/);
    expect(bashSyntaxOk(all)).toBe('ok');
    const grounded = buildTemplate('loupe-tiny-finetune', { recipe: 'grounded' });
    expect(grounded.script).toContain('--recipe grounded');
    expect(grounded.script).not.toMatch(/--reading|--train-args/);
    expect(grounded.notes.join('\n')).toMatch(/at least 3 text layers/);
    const reading = buildTemplate('loupe-tiny-finetune', { reading: true }).script;
    expect(reading).toContain('--reading 1');
    expect(reading).not.toMatch(/--recipe|--train-args/);
    const one = buildTemplate('loupe-tiny-finetune', { recipe: 'plain', reading: false, trainArgs: '--box-weight=2' }).script;
    expect(one).toMatch(/--export none \\\n {4}--train-args --box-weight=2\n$/);
    expect(buildTemplate('loupe-tiny-finetune', { trainArgs: '   ' }).script).toBe(buildTemplate('loupe-tiny-finetune', {}).script);
    expect(buildTemplate('loupe-tiny-finetune', {}).notes.join('\n')).not.toMatch(/text layers/);
  });

  it('prepared data replaces synth; absolute paths stay absolute; minutes, cuda and ONNX export', () => {
    const out = buildTemplate('loupe-tiny-finetune', { dataDir: '/d/a, rel/b', baseModel: '/m/base', outputDir: 'out/ft', maxSteps: null, minutes: 1.5, device: 'cuda', exportOnnx: true });
    expect(out.script).toContain('--data /d/a,"$loupe_dir"/rel/b');
    expect(out.script).toContain('--init /m/base');
    expect(out.script).toContain('--out "$loupe_dir"/out/ft');
    expect(out.script).toContain('--minutes 1.5');
    expect(out.script).toContain('--export fp32,q8');
    expect(out.script).not.toMatch(/--seed|--scenes|--max-steps/);
    expect(out.resources).toEqual({ cpus: 2, gpus: 1 });
    expect(bashSyntaxOk(out.script)).toBe('ok');
  });

  it('names each bad parameter', () => {
    const bad = (params: Record<string, unknown>): Array<{ path: string; message: string }> => {
      try {
        buildTemplate('loupe-tiny-finetune', params);
      } catch (e) {
        expect(e).toBeInstanceOf(TemplateParamsError);
        return (e as TemplateParamsError).issues;
      }
      throw new Error('no error');
    };
    expect(bad({ maxSteps: null })).toEqual([{ path: 'maxSteps', message: 'give maxSteps or minutes (or both): the trainer needs a limit' }]);
    expect(bad({ scenes: 0 })).toEqual([{ path: 'scenes', message: 'scenes must be > 0' }]);
    expect(bad({ batchSize: 2.5 })).toEqual([{ path: 'batchSize', message: 'batchSize must be a whole number' }]);
    expect(bad({ device: 'tpu' })[0]?.path).toBe('device');
    expect(bad({ workDir: '../x' })[0]).toEqual({ path: 'workDir', message: 'a folder name: letters, digits, . _ -' });
    expect(bad({ baseModel: '' })[0]).toEqual({ path: 'baseModel', message: 'must not be empty' });
    expect(bad({ recipe: 'fancy' })[0]?.path).toBe('recipe');
    expect(bad({ reading: 1 })[0]?.path).toBe('reading');
    const oneLine = { path: 'trainArgs', message: 'trainArgs must be one line (extra train.py flags separated by spaces)' };
    const chars = { path: 'trainArgs', message: 'trainArgs may hold only letters, digits, spaces and - . = , _ (train.py flags such as --aux-read 5 --crop-eval 0)' };
    expect(bad({ trainArgs: '--aux-read 5\n--aux-pos 1' })).toEqual([oneLine]);
    expect(bad({ trainArgs: '--aux-read 5\r' })).toEqual([oneLine]);
    for (const t of ['--aux-read 5; rm -rf ~', '--aux-read $(id)', '--x `id`', "--x 'a'", '--x "a"', '--x a|b', '--x a&', '--x a>b', '--x\t1', '--x a/b', '--x ~']) {
      expect(bad({ trainArgs: t }), t).toEqual([chars]);
    }
  });

  // The real driver, through the local connector: bad inputs fail at once with a message that says what to fix.
  const runJob = async (params: Record<string, unknown>, env: Record<string, string> = {}): Promise<{ state: string; text: string }> => {
    const local = new LocalConnector({ root: path.join(tmp, 'jobs-tiny') });
    const spec = templateToJobSpec(buildTemplate('loupe-tiny-finetune', params), { name: 'tiny-bad', kind: 'local', extraEnv: { LOUPE_REPO: REPO, ...env } });
    const { id } = await local.submit(spec);
    let text = '';
    const res = await local.follow(id, { pollMs: 30, onText: (t) => (text += t) }).done;
    return { state: res.status.state, text };
  };

  it('fails at once on a missing base model, a data folder without a manifest, or a Python without torch', async () => {
    const missing = await runJob({ baseModel: path.join(tmp, 'no-such-model') });
    expect(missing.state).toBe('failed');
    expect(missing.text).toContain(`loupe-tiny: base model folder ${path.join(tmp, 'no-such-model')} does not exist`);
    mkdirSync(path.join(tmp, 'model-no-weights'), { recursive: true });
    writeFileSync(path.join(tmp, 'model-no-weights', 'config.json'), '{}');
    const noWeights = await runJob({ baseModel: path.join(tmp, 'model-no-weights') });
    // no weights: a fresh model of its config (said in the log); this folder also lacks a tokenizer, so it stops there
    expect(noWeights.text).toMatch(/has no model\.safetensors, so training starts from a fresh \(random\) model/);
    expect(noWeights.state).toBe('failed');
    expect(noWeights.text).toMatch(/has no tokenizer\.json/);
    const model = path.join(tmp, 'model-ok');
    mkdirSync(model, { recursive: true });
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) writeFileSync(path.join(model, f), '{}');
    const noData = await runJob({ baseModel: model, dataDir: tmp });
    expect(noData.state).toBe('failed');
    expect(noData.text).toContain(`loupe-tiny: prepared data folder ${tmp} has no manifest.jsonl`);
    const noTorch = await runJob({ baseModel: model }, { LOUPE_PYTHON: '/bin/false' });
    expect(noTorch.state).toBe('failed');
    expect(noTorch.text).toContain('LOUPE_PYTHON=/bin/false cannot import torch: needs Python 3 with torch (pip install torch, or apt install python3-torch)');
    expect(noTorch.text).not.toContain('[1/3]');
    const noRepo = templateToJobSpec(buildTemplate('loupe-tiny-finetune', {}), { name: 'tiny-norepo', kind: 'local' });
    const local = new LocalConnector({ root: path.join(tmp, 'jobs-tiny') });
    const { id } = await local.submit({ ...noRepo, env: { ...noRepo.env, LOUPE_REPO: '' } });
    let text = '';
    expect((await local.follow(id, { pollMs: 30, onText: (t) => (text += t) }).done).status.state).toBe('failed');
    expect(text).toContain('set LOUPE_REPO to a Loupe checkout');
  }, 60_000);

  // The real driver through the local connector, with a LOUPE_PYTHON that answers the driver's torch checks and writes
  // the train.py command line it is given (one argument a line) instead of training.
  it('the driver passes the recipe, reading and trainArgs flags to train.py, after the plain command line', async () => {
    const dir = path.join(tmp, 'argv');
    const model = path.join(dir, 'model');
    const data = path.join(dir, 'prepared');
    mkdirSync(model, { recursive: true });
    mkdirSync(data, { recursive: true });
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) writeFileSync(path.join(model, f), '{}');
    writeFileSync(path.join(data, 'manifest.jsonl'), '{}\n');
    const argvFile = path.join(dir, 'argv.txt');
    const out = path.join(dir, 'out');
    const py = path.join(dir, 'python-argv');
    writeFileSync(py, `#!/bin/sh\nif [ "$1" = -c ]; then echo 0.0-argv; exit 0; fi\nprintf '%s\\n' "$@" > '${argvFile}'\n`, { mode: 0o755 });
    const argv = async (params: Record<string, unknown>): Promise<string[]> => {
      rmSync(argvFile, { force: true });
      const r = await runJob({ baseModel: model, dataDir: data, outputDir: out, ...params }, { LOUPE_PYTHON: py });
      expect(r.state, r.text).toBe('succeeded');
      expect(r.text).toContain(`LOUPE_CHECKPOINT: ${out}`);
      return readFileSync(argvFile, 'utf8').split('\n').slice(0, -1);
    };
    const plain = await argv({});
    expect(plain).toEqual(['models/loupe-tiny/train.py', '--data', data, '--init', model, '--out', out, '--device', 'cpu', '--bs', '4', '--log-every', '1', '--export', 'none', '--max-steps', '20', '--lr', '3e-4', '--val-every', '10']);
    const grounded = ['--aug-flips', '--aux-target', '1', '--aux-pos', '3', '--aux-attn', '1', '--aux-attn-layer', '2', '--aux-read', '10', '--box-weight', '3', '--first-turns', '2'];
    const reading = ['--aux-glyph', '1', '--aux-attn2', '1'];
    expect(await argv({ recipe: 'grounded' })).toEqual([...plain, ...grounded]);
    expect(await argv({ reading: true })).toEqual([...plain, ...reading]);
    expect(await argv({ recipe: 'grounded', reading: true, trainArgs: ' --aux-attn-layer 1  --crop-eval=0 ' })).toEqual([...plain, ...grounded, ...reading, '--aux-attn-layer', '1', '--crop-eval=0']);
  }, 60_000);

  it('the driver refuses an unknown recipe, a reading that is not 0 or 1, and trainArgs over several lines', () => {
    const drive = (...extra: string[]): { status: number | null; stderr: string } =>
      spawnSync('bash', [path.join(REPO, 'models/loupe-tiny/finetune.sh'), '--init', path.join(tmp, 'argv', 'model'), '--out', path.join(tmp, 'argv', 'o'), '--data', path.join(tmp, 'argv', 'prepared'), ...extra], {
        encoding: 'utf8',
        env: { ...process.env, LOUPE_PYTHON: '/bin/false' },
      });
    const recipe = drive('--recipe', 'fancy');
    expect(recipe.status).toBe(2);
    expect(recipe.stderr).toBe('loupe-tiny: --recipe must be plain or grounded (got fancy)\n');
    expect(drive('--reading', 'yes').stderr).toBe('loupe-tiny: --reading must be 0 or 1 (got yes)\n');
    expect(drive('--train-args', '--aux-read 5\n--aux-pos 1').stderr).toBe('loupe-tiny: --train-args must be one line (extra train.py flags separated by spaces)\n');
    // valid values pass these checks and stop only at the (deliberately torch-less) Python
    expect(drive('--recipe', 'grounded', '--reading', '1', '--train-args', '--crop-eval 0').stderr).toMatch(/^loupe-tiny: LOUPE_PYTHON=\/bin\/false cannot import torch/);
  });
});

/**
 * `vllm serve`'s documented options (docs.vllm.ai "Engine Arguments" and the `vllm serve` usage of the OpenAI-compatible
 * server, v0.8.x; the DeepEyes and PyVision-RL judge scripts use exactly these): the rendered judge command may use
 * nothing else, each valued flag must be followed by one value of the right shape, and the model is the positional.
 */
const VLLM_SERVE_FLAGS: Record<string, 'int' | 'float' | 'str' | 'switch'> = {
  '--host': 'str',
  '--port': 'int',
  '--api-key': 'str',
  '--gpu-memory-utilization': 'float',
  '--max-model-len': 'int',
  '--tensor-parallel-size': 'int',
  '--served-model-name': 'str',
  '--trust-remote-code': 'switch',
  '--disable-log-requests': 'switch',
};

/** Split a rendered command into words as bash would (quotes and line continuations), with bash itself. */
function bashWords(cmd: string): string[] {
  const out = execFileSync('bash', ['-c', 'set -f; eval "set -- $1"; for w in "$@"; do printf "%s\\0" "$w"; done', '_', cmd.trim()], { encoding: 'utf8' });
  return out.split('\0').slice(0, -1);
}

function parseVllmServe(words: string[]): { model: string; flags: Map<string, string | true> } {
  expect(words.slice(0, 2)).toEqual(['vllm', 'serve']);
  const model = words[2]!;
  expect(model.startsWith('-')).toBe(false);
  const flags = new Map<string, string | true>();
  for (let i = 3; i < words.length; i++) {
    const f = words[i]!;
    const kind = VLLM_SERVE_FLAGS[f];
    expect(kind, `${f} is not a documented vllm serve option`).toBeDefined();
    if (kind === 'switch') {
      flags.set(f, true);
      continue;
    }
    const v = words[++i];
    expect(v, `${f} needs a value`).toBeDefined();
    if (kind === 'int') expect(v).toMatch(/^\d+$/);
    if (kind === 'float') expect(v).toMatch(/^\d+(\.\d+)?$/);
    flags.set(f, v!);
  }
  return { model, flags };
}

describe('the LLM judge server job and the PyVision-RL template', () => {
  it('the judge job renders vllm serve with documented options only, served as "judge"', () => {
    const out = buildTemplate('llm-judge-server', { judgeModel: '/models/Qwen2.5-72B-Instruct', judgeTensorParallel: 4 });
    const line = out.script.split('\n').slice(2).join('\n');
    const { model, flags } = parseVllmServe(bashWords(line));
    expect(model).toBe('/models/Qwen2.5-72B-Instruct');
    expect(Object.fromEntries(flags)).toEqual({
      '--port': '18901',
      '--gpu-memory-utilization': '0.8',
      '--max-model-len': '32768',
      '--tensor-parallel-size': '4',
      '--served-model-name': 'judge',
      '--trust-remote-code': true,
      '--disable-log-requests': true,
      '--host': '0.0.0.0',
    });
    expect(out.resources).toEqual({ nodes: 1, gpus: 4 });
    expect(bashSyntaxOk(out.script)).toBe('ok');
  });

  it('a hostile judge model stays one word; a bad port, size or bind host is refused with the field named', () => {
    const evil = "Qwen'; touch /tmp/x; echo '$(id)`id`";
    const { model } = parseVllmServe(bashWords(buildTemplate('llm-judge-server', { judgeModel: evil }).script.split('\n').slice(2).join('\n')));
    expect(model).toBe(evil);
    expect(() => buildTemplate('llm-judge-server', { judgePort: 70000 })).toThrow(/judgePort/);
    expect(() => buildTemplate('llm-judge-server', { judgeTensorParallel: 0 })).toThrow(/judgeTensorParallel must be > 0/);
    expect(() => buildTemplate('llm-judge-server', { bindHost: '0.0.0.0 --api-key x' })).toThrow(/bindHost/);
  });

  it('DeepEyes and PyVision-RL start the same judge service (one command builder)', () => {
    const de = buildTemplate('deepeyes-grpo', {}).services[0]!.script;
    const pv = buildTemplate('pyvision-rl-grpo', required['pyvision-rl-grpo']).services[0]!.script;
    expect(pv).toBe(de);
    parseVllmServe(bashWords(pv.split('\n').slice(1).join('\n')));
  });

  it('PyVision-RL renders the verl_agents recipe: grpo n=8, batch 64, max_turns 5, the judge URL, data lists quoted', () => {
    const out = buildTemplate('pyvision-rl-grpo', { modelPath: '/ckpt/sft', trainFiles: ['/data/a b', 'rel/c'], judgeHost: 'judge-0' });
    expect(out.env).toMatchObject({ LLM_AS_A_JUDGE_BASE: 'http://judge-0:18901/v1', WORLD_SIZE: '2' });
    for (const o of ['actor_rollout_ref.rollout.n=8', 'data.train_batch_size=64', 'actor_rollout_ref.rollout.agent.max_turns=5', 'actor_rollout_ref.rollout.agent.single_response_max_tokens=10240', 'algorithm.filter_groups.metric=seq_reward', 'actor_rollout_ref.actor.optim.lr=1e-6', 'algorithm.kl_ctrl.kl_coef=0.0']) {
      expect(out.script).toContain(o);
    }
    // One word to bash: the list with each path quoted, a relative one under the job's folder.
    const word = out.script.split('\n').find((l) => l.includes('data.train_files='))!.trim().replace(/ \\$/, '');
    expect(bashWords(word.replace('"$PWD"', '/job'))).toEqual(['data.train_files=[/data/a b,/job/rel/c]']);
    expect(bashSyntaxOk(out.script)).toBe('ok');
    expect(() => buildTemplate('pyvision-rl-grpo', { modelPath: '/m', trainFiles: [] })).toThrow(/trainFiles: at least one/);
    expect(() => buildTemplate('pyvision-rl-grpo', { modelPath: '/m', trainFiles: ['/d'], experimentName: 'x;rm -rf /' })).toThrow(/experimentName: a name/);
    expect(() => buildTemplate('pyvision-rl-grpo', { trainFiles: ['/d'] })).toThrow(/modelPath/);
  });
});
