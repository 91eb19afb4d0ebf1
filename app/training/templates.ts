/**
 * Job templates that produce the real commands of each upstream trainer, with parameter schemas whose defaults
 * come from the reference launch facts (shared reference pixel-reasoner-protocol.md §6, connectors.md §4) and the
 * upstream example scripts named per template. Scripts are generated, never copied.
 */
import { z } from 'zod';
import { msSwiftVsiPluginSource } from './rewards';
import { exportLines, hydraPathList, multiline, num, pyBool, q } from './shell';
import type { JobTemplate, TemplateOutput } from './types';

/**
 * Free text that reaches a job (paths, model ids): any characters but control characters. The templates pass it
 * to bash only single-quoted or through the environment, so `$()`, quotes or `;` stay literal; a line break or NUL
 * has no place in a path or a trainer's override and is refused here with a clear message.
 */
const text = (what = 'the value') =>
  z
    .string({ error: (iss) => (iss.input === undefined ? 'is required' : 'must be a string') })
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), `${what} must be one line without control characters`);
const path = text().min(1, 'must not be empty');
/** A host name or IP address (the judge's): it becomes part of a URL the job calls. */
const host = z
  .string()
  .min(1, 'must not be empty')
  .regex(/^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])$/, 'a host name or IP address (letters, digits, "-" and "."; IPv6 in [brackets])');
/**
 * A parameter object that refuses unknown keys and names the valid ones: a misspelled parameter (`--set modle=…`)
 * must be an error, not silently dropped so that the job runs with the default.
 */
export function templateParams<T extends z.ZodRawShape>(shape: T) {
  const names = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (iss) =>
      iss.code === 'unrecognized_keys' ? `unknown parameter${iss.keys.length > 1 ? 's' : ''} ${iss.keys.map((k) => JSON.stringify(k)).join(', ')}; valid: ${names}` : undefined,
  });
}
const posInt = (what: string) => z.number({ error: `${what} must be a number` }).int(`${what} must be a whole number`).positive(`${what} must be > 0`);
const prob = (what: string) => z.number().min(0, `${what} must be ≥ 0`).max(1, `${what} must be ≤ 1`);

// ───────────────────────── verl-tool pixel_reasoner GRPO ─────────────────────────
export const VerlToolPixelReasonerSchema = templateParams({
    /** verl-tool checkout on the machine that runs the job. */
    repoDir: path.default('.'),
    dataPrep: templateParams({
        enabled: z.boolean().default(true),
        datasetPath: text().default('TIGER-Lab/PixelReasoner-RL-Data'),
        localDir: text().default('data/pixel_reasoner'),
        version: z.string().regex(/^[A-Za-z0-9._-]+$/, 'version is a folder name: letters, digits, . _ -').default('max_8192'),
        /** Drop rows whose multimodal prompt is longer than this many tokens (prepare_train.py --filter_len). */
        filterLen: posInt('filterLen').nullable().default(8192),
        includeVideos: z.boolean().default(true),
      })
      .prefault({}),
    /** Use these parquet files instead of the prepared ones (e.g. a Loupe export converted to parquet). */
    trainFiles: z.array(path).optional(),
    valFiles: z.array(path).optional(),
    model: path.default('TIGER-Lab/PixelReasoner-WarmStart'),
    rlAlg: z.enum(['grpo', 'gae']).default('grpo'),
    nGpusPerNode: posInt('nGpusPerNode').default(8),
    nNodes: posInt('nNodes').default(1),
    n: posInt('n').default(8),
    batchSize: posInt('batchSize').default(128),
    ppoMiniBatchSize: posInt('ppoMiniBatchSize').default(64),
    maxPromptLength: posInt('maxPromptLength').default(16384),
    maxResponseLength: posInt('maxResponseLength').default(16384),
    maxObsLength: posInt('maxObsLength').default(8192),
    maxActionLength: posInt('maxActionLength').default(2048),
    temperature: z.number().positive().default(1.0),
    topP: prob('topP').default(1.0),
    maxTurns: posInt('maxTurns').default(3),
    lr: z.number().positive().default(1e-6),
    klLossCoef: z.number().min(0).default(0),
    entropyCoeff: z.number().min(0).default(0),
    tensorModelParallelSize: posInt('tensorModelParallelSize').default(2),
    gpuMemoryUtilization: prob('gpuMemoryUtilization').default(0.8),
    doOffload: z.boolean().default(false),
    workersPerTool: posInt('workersPerTool').default(4),
    saveFreq: posInt('saveFreq').default(10),
    testFreq: posInt('testFreq').default(10),
    totalEpochs: posInt('totalEpochs').default(10),
    projectName: z.string().regex(/^[A-Za-z0-9._-]+$/).default('pixel_reasoner'),
    experimentName: z.string().regex(/^[A-Za-z0-9._-]+$/).optional(),
    useWandb: z.boolean().default(false),
  })
  .superRefine((p, ctx) => {
    if (p.batchSize % p.ppoMiniBatchSize !== 0) ctx.addIssue({ code: 'custom', path: ['ppoMiniBatchSize'], message: `ppoMiniBatchSize (${p.ppoMiniBatchSize}) must divide batchSize (${p.batchSize})` });
    if (p.rlAlg === 'grpo' && p.n < 2) ctx.addIssue({ code: 'custom', path: ['n'], message: 'GRPO needs n ≥ 2 responses per prompt (group normalization)' });
    if (p.nGpusPerNode % p.tensorModelParallelSize !== 0) ctx.addIssue({ code: 'custom', path: ['tensorModelParallelSize'], message: `tensorModelParallelSize (${p.tensorModelParallelSize}) must divide nGpusPerNode (${p.nGpusPerNode})` });
    if (!p.dataPrep.enabled && !p.trainFiles?.length) ctx.addIssue({ code: 'custom', path: ['trainFiles'], message: 'give trainFiles when dataPrep is disabled' });
  });

export const verlToolPixelReasonerTemplate: JobTemplate<typeof VerlToolPixelReasonerSchema> = {
  id: 'verl-tool-pixel-reasoner-grpo',
  title: 'verl-tool · Pixel Reasoner GRPO',
  description: 'Multi-turn GRPO with the pixel_reasoner tool server and reward manager (verl-tool).',
  source: 'TIGER-AI-Lab/verl-tool examples/train/pixel_reasoner/train_qwen25vl.sh, examples/data_preprocess/pixel_reasoner/prepare_train.py',
  schema: VerlToolPixelReasonerSchema,
  build(p): TemplateOutput {
    const dp = p.dataPrep;
    const dataDir = `${dp.localDir}/${(dp.datasetPath.split('/').pop() ?? '').replace(/-/g, '_')}/${dp.version}`;
    const train = p.trainFiles ?? [`${dataDir}/train.parquet`];
    const val = p.valFiles ?? (p.trainFiles ? [] : [`${dataDir}/val.parquet`]);
    // The run name is a folder and a hydra value: only name characters of the model id (an HF id keeps its letters).
    const model = p.model.replace(/[^A-Za-z0-9._-]/g, '_').toLowerCase();
    const exp = p.experimentName ?? `pixel_reasoner-agent-${model}-${p.rlAlg}-n${p.n}-b${p.batchSize}-t${p.temperature}-lr${num(p.lr)}`;
    const metricsFile = `loupe_metrics/${p.projectName}/${exp}.jsonl`;
    const lines: string[] = ['set -euo pipefail', `cd ${q(p.repoDir)}`];
    if (dp.enabled && !p.trainFiles) {
      lines.push(
        `if [ ! -f ${q(`${dataDir}/train.parquet`)} ]; then`,
        `  ${multiline('python examples/data_preprocess/pixel_reasoner/prepare_train.py', [
          `--dataset_path=${q(dp.datasetPath)}`,
          `--local_dir=${q(dp.localDir)}`,
          `--version=${q(dp.version)}`,
          `--include_videos=${pyBool(dp.includeVideos)}`,
          ...(dp.filterLen ? [`--filter_len=${dp.filterLen}`] : []),
        ])}`,
        'fi',
      );
    }
    lines.push(
      '# verl cannot take special strings as overrides: the action stop token goes through a file',
      'action_stop_tokens_file=$(mktemp)',
      "printf '%s' '</tool_call>' > \"$action_stop_tokens_file\"",
      "host=$(hostname -i | awk '{print $1}')",
      'port=$(shuf -i 30000-31000 -n 1)',
      `python -m verl_tool.servers.serve --host "$host" --port "$port" --tool_type pixel_reasoner --workers_per_tool ${p.workersPerTool} &`,
      'tool_server_pid=$!',
      'trap \'kill "$tool_server_pid" 2>/dev/null || true\' EXIT',
      `mkdir -p ${q(metricsFile.replace(/\/[^/]+$/, ''))}`,
      `export VERL_FILE_LOGGER_PATH="$PWD"/${q(metricsFile)}`,
    );
    const args: Array<string | [string, string | number | boolean]> = [
      `algorithm.adv_estimator=${p.rlAlg}`,
      hydraPathList('data.train_files', train),
      ...(val.length ? [hydraPathList('data.val_files', val)] : []),
      `data.train_batch_size=${p.batchSize}`,
      `data.max_prompt_length=${p.maxPromptLength}`,
      `data.max_response_length=${p.maxResponseLength}`,
      'data.filter_overlong_prompts=False',
      "data.truncation='right'",
      'reward_model.reward_manager=pixel_reasoner',
      'reward_model.launch_reward_fn_async=True',
      `actor_rollout_ref.model.path=${q(p.model)}`,
      'actor_rollout_ref.model.enable_gradient_checkpointing=True',
      'actor_rollout_ref.model.use_remove_padding=True',
      'actor_rollout_ref.model.trust_remote_code=True',
      `actor_rollout_ref.actor.optim.lr=${num(p.lr)}`,
      `actor_rollout_ref.actor.ppo_mini_batch_size=${p.ppoMiniBatchSize}`,
      'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1',
      `actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${p.maxPromptLength + p.maxResponseLength}`,
      'actor_rollout_ref.actor.use_kl_loss=True',
      'actor_rollout_ref.actor.strategy=fsdp2',
      `actor_rollout_ref.actor.kl_loss_coef=${p.klLossCoef}`,
      'actor_rollout_ref.actor.kl_loss_type=low_var_kl',
      `actor_rollout_ref.actor.entropy_coeff=${p.entropyCoeff}`,
      `actor_rollout_ref.actor.fsdp_config.param_offload=${pyBool(p.doOffload)}`,
      `actor_rollout_ref.actor.fsdp_config.optimizer_offload=${pyBool(p.doOffload)}`,
      'actor_rollout_ref.agent.enable_agent=True',
      'actor_rollout_ref.agent.tool_server_url="http://$host:$port/get_observation"',
      `actor_rollout_ref.agent.max_prompt_length=${p.maxPromptLength}`,
      `actor_rollout_ref.agent.max_response_length=${p.maxResponseLength}`,
      `actor_rollout_ref.agent.max_start_length=${p.maxPromptLength}`,
      `actor_rollout_ref.agent.max_obs_length=${p.maxObsLength}`,
      `actor_rollout_ref.agent.max_turns=${p.maxTurns}`,
      'actor_rollout_ref.agent.additional_eos_token_ids=[151645]',
      'actor_rollout_ref.agent.mask_observations=True',
      'actor_rollout_ref.agent.action_stop_tokens="$action_stop_tokens_file"',
      'actor_rollout_ref.agent.enable_mtrl=True',
      `actor_rollout_ref.agent.max_action_length=${p.maxActionLength}`,
      `actor_rollout_ref.rollout.tensor_model_parallel_size=${p.tensorModelParallelSize}`,
      'actor_rollout_ref.rollout.name=vllm',
      'actor_rollout_ref.rollout.mode=async',
      `actor_rollout_ref.rollout.gpu_memory_utilization=${p.gpuMemoryUtilization}`,
      `actor_rollout_ref.rollout.temperature=${p.temperature}`,
      `actor_rollout_ref.rollout.top_p=${p.topP}`,
      `actor_rollout_ref.rollout.n=${p.n}`,
      'actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8',
      'actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8',
      `actor_rollout_ref.ref.fsdp_config.param_offload=${pyBool(p.doOffload)}`,
      'algorithm.kl_ctrl.kl_coef=0',
      `trainer.logger=['console','file'${p.useWandb ? ",'wandb'" : ''}]`,
      `trainer.project_name=${p.projectName}`,
      q(`trainer.experiment_name=${exp}`),
      'trainer.val_before_train=True',
      `trainer.n_gpus_per_node=${p.nGpusPerNode}`,
      `trainer.nnodes=${p.nNodes}`,
      `trainer.save_freq=${p.saveFreq}`,
      `trainer.test_freq=${p.testFreq}`,
      `trainer.total_epochs=${p.totalEpochs}`,
    ];
    lines.push(multiline('PYTHONUNBUFFERED=1 python3 -m verl_tool.trainer.main_ppo', args));
    return {
      templateId: this.id,
      script: `${lines.join('\n')}\n`,
      env: { VLLM_USE_V1: '1', VERL_RUN_ID: exp },
      files: [],
      services: [],
      resources: { nodes: p.nNodes, gpus: p.nGpusPerNode },
      metrics: { format: 'verl-jsonl', file: metricsFile },
      notes: [
        'The tool server runs inside the job on a random port in 30000-31000.',
        `Metrics: console lines "step:N - …" and JSONL at ${metricsFile} (trainer.logger includes 'file').`,
        ...(dp.filterLen ? [] : ['filterLen is off: very long multimodal prompts are truncated on the right, which breaks image tokens.']),
      ],
    };
  },
};

// ───────────────────────── Pixel Reasoner curiosity-driven RL (OpenRLHF) ─────────────────────────
export const PixelReasonerRlSchema = templateParams({
  /** Pixel-Reasoner checkout's curiosity_driven_rl folder. */
  repoDir: path.default('curiosity_driven_rl'),
  /** Warm-start policy (HF id or path). */
  policy: path.default('TIGER-Lab/PixelReasoner-WarmStart'),
  /** Training parquet (`trainver`); the upstream script hard-codes DATASET, so it is patched to use this. */
  trainver: path,
  /** Evaluation parquet (`testver`). */
  testver: path,
  sys: z.enum(['vcot', 'default', 'notool']).default('vcot'),
  maxPixels: posInt('MAX_PIXELS').default(4014080),
  minPixels: posInt('MIN_PIXELS').default(401408),
  bsz: posInt('bsz').default(256),
  rbuffer: posInt('rbuffer').default(512),
  nsamples: posInt('nsamples').default(8),
  /** Learning rate in units of 1e-7 (the script passes `${lr}e-7`): 10 → 1e-6. */
  lr: posInt('lr').default(10),
  temperature: z.number().positive().default(1.0),
  maxlen: posInt('maxlen').default(10000),
  logpBsz: posInt('logp_bsz').default(1),
  filter: z.boolean().default(true),
  algo: z.enum(['group', 'group_sft', 'reinforce', 'gae']).default('group'),
  nepoch: posInt('nepoch').default(3),
  tagname: z.string().regex(/^[A-Za-z0-9._-]*$/).default('loupe'),
  /** Where checkpoints go (`working_dir`, saves under it). */
  workDir: path.default('.'),
});

export const pixelReasonerRlTemplate: JobTemplate<typeof PixelReasonerRlSchema> = {
  id: 'pixel-reasoner-curiosity-rl',
  title: 'Pixel Reasoner · curiosity-driven RL (OpenRLHF)',
  description: 'scripts/train_vlm_multi.sh with its environment variables; starts a Ray head and submits openrlhf.cli.train_ppo_ray.',
  source: 'TIGER-AI-Lab/Pixel-Reasoner curiosity_driven_rl/scripts/train_vlm_multi.sh; reference §6 (PR RL)',
  schema: PixelReasonerRlSchema,
  build(p): TemplateOutput {
    const env: Record<string, string> = {
      policy: p.policy,
      trainver: p.trainver,
      testver: p.testver,
      sys: p.sys,
      MAX_PIXELS: String(p.maxPixels),
      MIN_PIXELS: String(p.minPixels),
      bsz: String(p.bsz),
      rbuffer: String(p.rbuffer),
      nsamples: String(p.nsamples),
      lr: String(p.lr),
      temperature: String(p.temperature),
      maxlen: String(p.maxlen),
      logp_bsz: String(p.logpBsz),
      filter: p.filter ? 'True' : 'None',
      algo: p.algo,
      nepoch: String(p.nepoch),
      tagname: p.tagname,
      // The patched upstream line reads it from the environment: the value never becomes script text.
      LOUPE_WORK_DIR: p.workDir,
    };
    // The upstream script hard-codes placeholder paths, overwrites WANDB_API_KEY, and reads rbuffer from ${bsz}.
    const patch = [
      's#^working_dir=.*#working_dir=${LOUPE_WORK_DIR}#',
      's#^DATASET=.*#DATASET=${trainver}#',
      's#^testdata=.*#testdata=${testver}#',
      's#^rbuffer=\\${bsz:-#rbuffer=${rbuffer:-#',
      's#^export WANDB_API_KEY=""#export WANDB_API_KEY=${WANDB_API_KEY:-""}#',
    ];
    const lines = [
      'set -euo pipefail',
      `cd ${q(p.repoDir)}`,
      ...exportLines(env),
      'patched=$(mktemp --suffix=.sh)',
      `sed ${patch.map((s) => `-e ${q(s)}`).join(' ')} scripts/train_vlm_multi.sh > "$patched"`,
      'grep -q "^DATASET=\\${trainver}" "$patched" || { echo "loupe: could not patch DATASET in scripts/train_vlm_multi.sh (upstream changed?)" >&2; exit 2; }',
      'bash "$patched"',
    ];
    return {
      templateId: this.id,
      script: `${lines.join('\n')}\n`,
      env: {},
      files: [],
      services: [],
      resources: { nodes: 1, gpus: 8 },
      metrics: { format: 'openrlhf' },
      notes: [
        'Expects 8 GPUs per node (4×8 actor + 4×8 vLLM in the multi-node layout).',
        'MAX_PIXELS/MIN_PIXELS must reach every Ray node (the README warns); they are exported before ray start.',
        'Patched: working_dir, DATASET, testdata, rbuffer (upstream reads ${bsz}), WANDB_API_KEY (upstream blanks it).',
      ],
    };
  },
};

// ───────────────────────── ms-swift GRPO on VSI-Bench (MRA reward) ─────────────────────────
export const MsSwiftVsiSchema = templateParams({
    model: path.default('Qwen/Qwen2.5-VL-7B-Instruct'),
    /** ms-swift JSONL ({messages, videos, solution, question_type}); see exportMsSwiftRows. */
    dataset: path,
    outputDir: path.default('output/vsi_grpo'),
    numGenerations: posInt('numGenerations').default(12),
    beta: z.number().min(0).default(0),
    temperature: z.number().positive().default(0.9),
    maxCompletionLength: posInt('maxCompletionLength').default(2048),
    learningRate: z.number().positive().default(1e-6),
    perDeviceTrainBatchSize: posInt('perDeviceTrainBatchSize').default(3),
    gradientAccumulationSteps: posInt('gradientAccumulationSteps').default(1),
    nprocPerNode: posInt('nprocPerNode').default(8),
    numTrainEpochs: posInt('numTrainEpochs').default(1),
    maxPixels: posInt('MAX_PIXELS').default(602112),
    fpsMaxFrames: posInt('FPS_MAX_FRAMES').default(16),
    rewardFuncs: z.array(z.enum(['vsi_mra', 'format'])).min(1, 'at least one reward function').default(['vsi_mra']),
    useVllm: z.boolean().default(true),
  })
  .superRefine((p, ctx) => {
    const gen = p.perDeviceTrainBatchSize * p.nprocPerNode * p.gradientAccumulationSteps;
    if (gen % p.numGenerations !== 0) {
      ctx.addIssue({ code: 'custom', path: ['numGenerations'], message: `the generation batch (perDeviceTrainBatchSize × nprocPerNode × gradientAccumulationSteps = ${gen}) must be divisible by numGenerations (${p.numGenerations})` });
    }
  });

export const msSwiftVsiTemplate: JobTemplate<typeof MsSwiftVsiSchema> = {
  id: 'ms-swift-grpo-vsibench',
  title: 'ms-swift · GRPO on VSI-Bench (MRA reward)',
  description: 'swift rlhf --rlhf_type grpo with a generated ORM plugin scoring VSI-Bench answers (MRA for numbers, letter match for choices).',
  source: 'modelscope/ms-swift GRPO docs (GetStarted/GRPO.md, DeveloperGuide/reward_function.md); reference §6 (MS) and VSI-Bench scoring',
  schema: MsSwiftVsiSchema,
  build(p): TemplateOutput {
    const pluginPath = 'loupe_plugins/vsi_mra_plugin.py';
    const args: Array<string | [string, string | number | boolean]> = [
      ['--rlhf_type', 'grpo'],
      ['--model', p.model],
      ['--external_plugins', pluginPath],
      ['--reward_funcs', p.rewardFuncs.join(' ')],
      ['--dataset', p.dataset],
      ['--num_generations', p.numGenerations],
      ['--beta', p.beta],
      ['--temperature', p.temperature],
      ['--max_completion_length', p.maxCompletionLength],
      ['--learning_rate', num(p.learningRate)],
      ['--per_device_train_batch_size', p.perDeviceTrainBatchSize],
      ['--gradient_accumulation_steps', p.gradientAccumulationSteps],
      ['--num_train_epochs', p.numTrainEpochs],
      ['--train_type', 'full'],
      ['--torch_dtype', 'bfloat16'],
      ['--logging_steps', 1],
      ['--output_dir', p.outputDir],
      ['--report_to', 'tensorboard'],
      ...(p.useVllm ? ([['--use_vllm', 'true'], ['--vllm_mode', 'colocate']] as Array<[string, string]>) : []),
    ];
    // reward_funcs takes several names: split them back into separate words.
    const cmd = multiline('swift rlhf', args).replace(`--reward_funcs ${q(p.rewardFuncs.join(' '))}`, `--reward_funcs ${p.rewardFuncs.join(' ')}`);
    return {
      templateId: this.id,
      script: `set -euo pipefail\n${cmd}\n`,
      env: { NPROC_PER_NODE: String(p.nprocPerNode), MAX_PIXELS: String(p.maxPixels), FPS_MAX_FRAMES: String(p.fpsMaxFrames) },
      files: [{ path: pluginPath, content: msSwiftVsiPluginSource() }],
      services: [],
      resources: { nodes: 1, gpus: p.nprocPerNode },
      metrics: { format: 'ms-swift', file: `${p.outputDir}/*/logging.jsonl` },
      notes: ['ms-swift writes logging.jsonl under a versioned run folder (output_dir/vN-<date>/).', 'Reward keys in logs: reward, reward_std, rewards/VsiMra/mean (name depends on the ms-swift version).'],
    };
  },
};

// ───────────────────────── the LLM judge as an OpenAI-compatible vLLM server ─────────────────────────
/** The judge's parameters, shared by the templates that need one (DeepEyes, PyVision-RL) and the judge job itself. */
const judgeShape = {
  judgeModel: path.default('Qwen/Qwen2.5-72B-Instruct'),
  /** Host the judge runs on, as seen from the training nodes. */
  judgeHost: host.default('127.0.0.1'),
  judgePort: z.number().int().min(1).max(65535).default(18901),
  judgeTensorParallel: posInt('judgeTensorParallel').default(8),
  judgeMaxModelLen: posInt('judgeMaxModelLen').default(32768),
};

/**
 * `vllm serve MODEL` as DeepEyes' and PyVision-RL's judge scripts start it (served as "judge", port 18901,
 * memory 0.8, context 32768). Only flags of vLLM's documented `vllm serve` CLI are used (checked in
 * templates.test.ts); the model is a quoted shell word, numbers are validated numbers.
 */
export function vllmJudgeCommand(p: { judgeModel: string; judgePort: number; judgeTensorParallel: number; judgeMaxModelLen: number }, extra: Array<string | [string, string | number]> = []): string {
  return multiline(`vllm serve ${q(p.judgeModel)}`, [
    ['--port', p.judgePort],
    ['--gpu-memory-utilization', 0.8],
    ['--max-model-len', p.judgeMaxModelLen],
    ['--tensor-parallel-size', p.judgeTensorParallel],
    ['--served-model-name', 'judge'],
    '--trust-remote-code',
    '--disable-log-requests',
    ...extra,
  ]);
}

export const JudgeServerSchema = templateParams({
  judgeModel: judgeShape.judgeModel,
  judgePort: judgeShape.judgePort,
  judgeTensorParallel: judgeShape.judgeTensorParallel,
  judgeMaxModelLen: judgeShape.judgeMaxModelLen,
  /** Address the server binds (0.0.0.0: reachable from the training nodes). */
  bindHost: z.union([z.literal('0.0.0.0'), host]).default('0.0.0.0'),
});

export const judgeServerTemplate: JobTemplate<typeof JudgeServerSchema> = {
  id: 'llm-judge-server',
  title: 'LLM judge · OpenAI-compatible vLLM server',
  description: 'The judge model (default Qwen2.5-72B-Instruct) served by vLLM as "judge", for DeepEyes / PyVision-RL rewards and for `loupe rescore --scorer llm-judge`. Locally, `loupe serve-model` stands in for it.',
  source: 'agents-x-project/PyVision-RL verl_agents/serve_llm.sh, slurm_scripts/sbatch_serve_llm.sh; Visual-Agent/DeepEyes README Step 2; vLLM `vllm serve` CLI',
  schema: JudgeServerSchema,
  build(p): TemplateOutput {
    const script = ['set -euo pipefail', `echo ${q(`loupe: the judge (model "judge") answers on port ${p.judgePort} of this host, at /v1`)}`, vllmJudgeCommand(p, [['--host', p.bindHost]])].join('\n');
    return {
      templateId: this.id,
      script: `${script}\n`,
      env: {},
      files: [],
      services: [],
      resources: { nodes: 1, gpus: p.judgeTensorParallel },
      metrics: { format: 'auto' },
      notes: [`Runs until cancelled; point trainers or \`loupe rescore --judge-url http://HOST:${p.judgePort}/v1 --judge-model judge\` at it.`],
    };
  },
};

// ───────────────────────── DeepEyes (verl_agents + LLM judge) ─────────────────────────
export const DeepEyesSchema = templateParams({
  repoDir: path.default('.'),
  size: z.enum(['7b', '32b']).default('7b'),
  /** Training nodes (8 GPUs each). */
  worldSize: posInt('worldSize').default(4),
  ...judgeShape,
});

export const deepEyesTemplate: JobTemplate<typeof DeepEyesSchema> = {
  id: 'deepeyes-grpo',
  title: 'DeepEyes · GRPO with an LLM judge',
  description: 'A vLLM judge (served as "judge") plus the DeepEyes verl main_ppo recipe (grpo, n=16, batch 256, lr 1e-6, kl 0).',
  source: 'Visual-Agent/DeepEyes README (Step 1-3), examples/agent/final_merged_v1v8_thinklite{,_32b}.sh; reference §6 (DE)',
  schema: DeepEyesSchema,
  build(p): TemplateOutput {
    const judge = vllmJudgeCommand(p);
    const base = `http://${p.judgeHost}:${p.judgePort}/v1`;
    const script = [
      'set -euo pipefail',
      `cd ${q(p.repoDir)}`,
      `curl -sf ${q(`${base}/models`)} >/dev/null || { echo ${q(`loupe: the judge at ${base} does not answer; start the judge service first`)} >&2; exit 2; }`,
      `bash examples/agent/final_merged_v1v8_thinklite${p.size === '32b' ? '_32b' : ''}.sh`,
    ].join('\n');
    const gpus = p.worldSize * 8;
    return {
      templateId: this.id,
      script: `${script}\n`,
      env: { LLM_AS_A_JUDGE_BASE: base, WORLD_SIZE: String(p.worldSize) },
      files: [],
      services: [{ name: 'judge', script: `set -euo pipefail\n${judge}\n`, note: `needs ${p.judgeTensorParallel} GPUs; the trainer reaches it at ${base}` }],
      resources: { nodes: p.worldSize, gpus: 8 },
      metrics: { format: 'verl-console' },
      notes: [
        'Needs a Ray cluster across the training nodes before the script starts.',
        ...(p.size === '7b' && gpus < 32 ? [`${gpus} GPUs requested; DeepEyes recommends ≥ 32 GPUs for 7B`] : []),
      ],
    };
  },
};

// ───────────────────────── PyVision-RL (verl_agents, the code tool, LLM judge) ─────────────────────────
export const PyVisionRlSchema = templateParams({
  /** The PyVision-RL checkout's `verl_agents` folder. */
  repoDir: path.default('verl_agents'),
  /** The SFT checkpoint RL starts from (PyVision-RL: Qwen2.5-VL-7B after one SFT epoch). */
  modelPath: path,
  /** Parquet files or folders of training data (the upstream script passes folders). */
  trainFiles: z.array(path).min(1, 'at least one training file or folder'),
  valFiles: z.array(path).default([]),
  /** Training nodes (8 GPUs each). */
  worldSize: posInt('worldSize').default(2),
  rolloutN: posInt('rolloutN').default(8),
  batchSize: posInt('batchSize').default(64),
  lr: z.number().positive('lr must be > 0').default(1e-6),
  /** Model turns per rollout (`agent.max_turns`; validation uses 30 in the environment). */
  maxTurns: posInt('maxTurns').default(5),
  maxResponseTokensPerTurn: posInt('maxResponseTokensPerTurn').default(10240),
  maxPromptLength: posInt('maxPromptLength').default(32000),
  maxResponseLength: posInt('maxResponseLength').default(20480),
  totalEpochs: posInt('totalEpochs').default(32),
  saveFreq: posInt('saveFreq').default(10),
  projectName: z.string().regex(/^[A-Za-z0-9._-]+$/, 'a name: letters, digits, . _ -').default('pyvision-rl'),
  experimentName: z.string().regex(/^[A-Za-z0-9._-]+$/, 'a name: letters, digits, . _ -').default('qwen25vl-7b-grpo'),
  checkpointDir: path.default('checkpoints'),
  ...judgeShape,
});

export const pyvisionRlTemplate: JobTemplate<typeof PyVisionRlSchema> = {
  id: 'pyvision-rl-grpo',
  title: 'PyVision-RL · GRPO with the code tool and an LLM judge',
  description: 'A vLLM judge (served as "judge") plus PyVision-RL\'s verl_agents main_ppo (grpo, n=8, batch 64, lr 1e-6, kl 0, max_turns 5, filter groups on seq_reward).',
  source: 'agents-x-project/PyVision-RL verl_agents/examples/agent/train_pyvision_rl_7b_v4.sh, serve_llm.sh; reference §6 (PVRL)',
  schema: PyVisionRlSchema,
  build(p): TemplateOutput {
    const base = `http://${p.judgeHost}:${p.judgePort}/v1`;
    const args: Array<string | [string, string | number | boolean]> = [
      hydraPathList('data.train_files', p.trainFiles),
      ...(p.valFiles.length ? [hydraPathList('data.val_files', p.valFiles)] : []),
      `data.train_batch_size=${p.batchSize}`,
      `data.max_prompt_length=${p.maxPromptLength}`,
      `data.max_response_length=${p.maxResponseLength}`,
      'data.return_raw_chat=True',
      'data.filter_overlong_prompts=True',
      'algorithm.adv_estimator=grpo',
      'algorithm.kl_ctrl.kl_coef=0.0',
      'algorithm.filter_groups.enable=True',
      'algorithm.filter_groups.max_num_gen_batches=0',
      'algorithm.filter_groups.metric=seq_reward',
      `actor_rollout_ref.model.path=${q(p.modelPath)}`,
      'actor_rollout_ref.model.use_remove_padding=True',
      `actor_rollout_ref.actor.optim.lr=${num(p.lr)}`,
      `actor_rollout_ref.actor.ppo_mini_batch_size=${p.batchSize}`,
      'actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1',
      'actor_rollout_ref.actor.use_kl_loss=False',
      'actor_rollout_ref.actor.kl_loss_coef=0.0',
      'actor_rollout_ref.actor.entropy_coeff=0.0',
      'actor_rollout_ref.actor.fsdp_config.param_offload=True',
      'actor_rollout_ref.actor.fsdp_config.optimizer_offload=True',
      'actor_rollout_ref.rollout.name=vllm',
      `actor_rollout_ref.rollout.n=${p.rolloutN}`,
      'actor_rollout_ref.rollout.tensor_model_parallel_size=1',
      'actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8',
      'actor_rollout_ref.rollout.max_num_batched_tokens=32768',
      'actor_rollout_ref.rollout.gpu_memory_utilization=0.8',
      'actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8',
      'actor_rollout_ref.ref.fsdp_config.param_offload=True',
      'actor_rollout_ref.rollout.agent.activate_agent=True',
      'actor_rollout_ref.rollout.agent.tool_name_key=env_name',
      `actor_rollout_ref.rollout.agent.single_response_max_tokens=${p.maxResponseTokensPerTurn}`,
      `actor_rollout_ref.rollout.agent.max_turns=${p.maxTurns}`,
      'actor_rollout_ref.rollout.agent.concurrent_workers=1',
      'trainer.critic_warmup=0',
      "'trainer.logger=[console]'",
      'trainer.val_before_train=False',
      'trainer.n_gpus_per_node=8',
      `trainer.nnodes=${p.worldSize}`,
      `trainer.save_freq=${p.saveFreq}`,
      `trainer.project_name=${p.projectName}`,
      `trainer.experiment_name=${p.experimentName}`,
      `trainer.default_local_dir=${q(`${p.checkpointDir}/${p.projectName}/${p.experimentName}`)}`,
      `trainer.total_epochs=${p.totalEpochs}`,
    ];
    const script = [
      'set -euo pipefail',
      `cd ${q(p.repoDir)}`,
      `curl -sf ${q(`${base}/models`)} >/dev/null || { echo ${q(`loupe: the judge at ${base} does not answer; start the judge service first`)} >&2; exit 2; }`,
      `PYTHONUNBUFFERED=1 ${multiline('python3 -m verl.trainer.main_ppo', args)}`,
    ].join('\n');
    const gpus = p.worldSize * 8;
    return {
      templateId: this.id,
      script: `${script}\n`,
      env: { LLM_AS_A_JUDGE_BASE: base, WORLD_SIZE: String(p.worldSize), HYDRA_FULL_ERROR: '1' },
      files: [],
      services: [{ name: 'judge', script: `set -euo pipefail\n${vllmJudgeCommand(p)}\n`, note: `needs ${p.judgeTensorParallel} GPUs; the trainer reaches it at ${base}` }],
      resources: { nodes: p.worldSize, gpus: 8 },
      metrics: { format: 'verl-console' },
      notes: [
        'Needs a Ray cluster across the training nodes before the script starts (PyVision-RL: slurm_scripts/ray_head_start.sh, ray_worker_start.sh).',
        'Rollouts run model-written Python in the environment of verl_agents (safe_persis_python_exe_tool), not in Loupe\'s sandbox.',
        ...(gpus < 16 ? [`${gpus} GPUs requested; the PyVision-RL 7B recipe used 16`] : []),
      ],
    };
  },
};

// ───────────────────────── loupe-tiny local fine-tune ─────────────────────────
const folderName = z.string().regex(/^[A-Za-z0-9._-]+$/, 'a folder name: letters, digits, . _ -');
export const LoupeTinySchema = templateParams({
    /** Model folder to start from (config.json, model.safetensors, tokenizer); relative paths are in the Loupe checkout. */
    baseModel: path.default('models/loupe-tiny/model'),
    /** Prepared data folder(s) (prepare.ts output: manifest.jsonl + images/), comma-separated; empty = synthesize. */
    dataDir: text('dataDir').optional(),
    /** loupe-synth seed of the scenes to synthesize (when dataDir is empty). */
    synthSeed: z.number({ error: 'synthSeed must be a number' }).int('synthSeed must be a whole number').min(0, 'synthSeed must be ≥ 0').default(4000),
    /** How many scenes to synthesize and prepare (~1–2 s each on a laptop CPU). */
    scenes: posInt('scenes').max(5000, 'scenes must be ≤ 5000 (prepare is ~1–2 s per scene on a CPU)').default(24),
    /** Stop after this many optimizer steps (empty = no step limit; then give minutes). */
    maxSteps: posInt('maxSteps').nullable().default(20),
    /** Stop after this many minutes of training (empty = no time limit). */
    minutes: z.number({ error: 'minutes must be a number' }).positive('minutes must be > 0').nullable().default(null),
    batchSize: posInt('batchSize').default(4),
    lr: z.number({ error: 'lr must be a number' }).positive('lr must be > 0').max(1, 'lr must be ≤ 1').default(3e-4),
    device: z.enum(['cpu', 'cuda', 'auto']).default('cpu'),
    /** Validation loss every K steps. */
    valEvery: posInt('valEvery').default(10),
    /** Where the fine-tuned model goes; empty = <job folder>/model (relative paths are in the Loupe checkout). */
    outputDir: text('outputDir').optional(),
    /** Export ONNX (fp32 + q8, checked against PyTorch) so the Models page can load the result (needs transformers + onnx). */
    exportOnnx: z.boolean().default(false),
    /** Job-local scratch folder for the synthesized and prepared data. */
    workDir: folderName.default('data'),
    /** plain: the language-model loss only; grounded: adds train.py's training-only grounding losses (finetune.sh --recipe). */
    recipe: z.enum(['plain', 'grounded']).default('plain'),
    /** Also train the reading signals (train.py --aux-glyph 1 --aux-attn2 1, plus --scenes and the glyph pointer --aux-digit 1 on synthesized data; finetune.sh --reading 1). */
    reading: z.boolean().default(false),
    /** Extra train.py flags for experts, separated by spaces and appended last (finetune.sh --train-args). */
    trainArgs: z
      .string()
      .refine((s) => !/[\r\n]/.test(s), 'trainArgs must be one line (extra train.py flags separated by spaces)')
      .refine((s) => /^[A-Za-z0-9_.,= -]*$/.test(s.replace(/[\r\n]/g, '')), 'trainArgs may hold only letters, digits, spaces and - . = , _ (train.py flags such as --aux-read 5 --crop-eval 0)')
      .optional(),
  })
  .superRefine((p, ctx) => {
    if (p.maxSteps === null && p.minutes === null) ctx.addIssue({ code: 'custom', path: ['maxSteps'], message: 'give maxSteps or minutes (or both): the trainer needs a limit' });
  });

/** Driver of the three phases (synth → prepare → train), relative to the Loupe checkout. */
export const LOUPE_TINY_DRIVER = 'models/loupe-tiny/finetune.sh';

export const loupeTinyTemplate: JobTemplate<typeof LoupeTinySchema> = {
  id: 'loupe-tiny-finetune',
  title: 'loupe-tiny · local fine-tune',
  description:
    'Synthesize loupe-synth scenes, replay them through Loupe\'s agent loop into SFT data (prepare.ts), then fine-tune the bundled tiny model on them with models/loupe-tiny/train.py (plain torch; a few steps run on a laptop CPU).',
  source: 'Loupe (models/loupe-tiny: finetune.sh → loupe synth, prepare.ts, train.py)',
  schema: LoupeTinySchema,
  build(p): TemplateOutput {
    const out = p.outputDir?.trim() ? p.outputDir.trim() : null;
    const data = p.dataDir?.trim() ? p.dataDir.split(',').map((s) => s.trim()).filter(Boolean).join(',') : null;
    const extra = p.trainArgs?.trim() ? p.trainArgs.trim().split(/ +/).join(' ') : null;
    // Paths the user typed are meant in the Loupe checkout; the job itself runs in its own folder.
    const inRepo = (x: string): string => (x.startsWith('/') ? q(x) : `"$loupe_dir"/${q(x)}`);
    const args: string[] = [
      `--init ${inRepo(p.baseModel)}`,
      `--out ${out ? inRepo(out) : '"$PWD/model"'}`,
      ...(data ? [`--data ${data.split(',').map(inRepo).join(',')}`] : [`--seed ${p.synthSeed}`, `--scenes ${p.scenes}`, `--work ${q(p.workDir)}`]),
      `--device ${p.device}`,
      ...(p.maxSteps !== null ? [`--max-steps ${p.maxSteps}`] : []),
      ...(p.minutes !== null ? [`--minutes ${num(p.minutes)}`] : []),
      `--bs ${p.batchSize}`,
      `--lr ${num(p.lr)}`,
      `--val-every ${p.valEvery}`,
      '--log-every 1',
      `--export ${p.exportOnnx ? 'fp32,q8' : 'none'}`,
      // Only when not the default, so that a default job's script is what it was before these options.
      ...(p.recipe !== 'plain' ? [`--recipe ${p.recipe}`] : []),
      ...(p.reading ? ['--reading 1'] : []),
      ...(extra ? [`--train-args ${q(extra)}`] : []),
    ];
    const lines = [
      'set -euo pipefail',
      '# The Loupe checkout whose synth, prepare.ts and train.py run (Loupe sets LOUPE_REPO for local jobs).',
      'loupe_dir="${LOUPE_REPO:?set LOUPE_REPO to a Loupe checkout on the machine that runs this job}"',
      multiline(`bash "$loupe_dir"/${LOUPE_TINY_DRIVER}`, args),
    ];
    return {
      templateId: this.id,
      script: `${lines.join('\n')}\n`,
      env: { PYTHONUNBUFFERED: '1' },
      files: [],
      services: [],
      resources: { cpus: 2, ...(p.device === 'cuda' ? { gpus: 1 } : {}) },
      metrics: { format: 'verl-console' },
      notes: [
        'Python: LOUPE_PYTHON if set, else the first of python3, /usr/bin/python3 that imports torch; without one the job fails at once.',
        ...(data ? [] : [`Synthesizes ${p.scenes} scenes (seed ${p.synthSeed}) and prepares them in the job folder: about 1–2 s per scene on a laptop CPU.`]),
        'Metrics: "step:N - train/loss:… - train/lr:…" every step and "val/loss", "val/seq_exact" at validation points (verl console format).',
        p.exportOnnx
          ? 'ONNX export (fp32 + q8, about 20 s more) needs transformers and onnx in that Python; without them the trainer skips it and says so (the PyTorch weights are still written).'
          : 'No ONNX export: the result is PyTorch weights; tick exportOnnx to get a folder the Models page can load.',
        ...(p.recipe === 'grounded' || p.reading
          ? ['The grounding and reading losses supervise text layer 2 (--aux-attn-layer 2), so the base model needs at least 3 text layers (loupe-tiny has 5; tiny-random-qwen25vl has 2: add --aux-attn-layer 1 to trainArgs there).']
          : []),
      ],
    };
  },
};

// ───────────── the custom-script job type (ours, not an upstream recipe) ─────────────

/** Synthetic verl console lines: a smoke test of connectors, logs and charts, not training. */
const SYNTHETIC_VERL_SCRIPT = [
  '# Synthetic job: prints verl console-format metric lines; it trains nothing.',
  'echo "synthetic verl-format metrics on $(hostname)"',
  'for s in $(seq 1 12); do',
  '  awk -v s=$s \'BEGIN { printf "step:%d - critic/score/mean:np.float64(%.4f) - val/accuracy:%.4f - actor/pg_loss:%.4f - response_length/mean:%.1f - tool/call_rate:%.3f\\n", s, 0.2 + 0.05*s + 0.03*sin(s), 0.3 + 0.03*s, -0.05 + 0.004*s, 300 + 12*s, 0.4 + 0.02*s }\'',
  '  sleep 0.5',
  'done',
  'echo "LOUPE_CHECKPOINT: $PWD/checkpoints/global_step_12"',
  'echo "done"',
].join('\n');

const CustomScriptSchema = templateParams({
  /** The bash body to run, exactly as typed. */
  script: z.string().min(1, 'write the bash script to run').default(SYNTHETIC_VERL_SCRIPT),
  /** How to read metrics from the log. */
  metricsFormat: z.enum(['auto', 'verl-console', 'verl-jsonl', 'openrlhf', 'ms-swift']).default('auto'),
});

const customScriptTemplate: JobTemplate<typeof CustomScriptSchema> = {
  id: 'custom-script',
  title: 'Custom bash script',
  description: 'Runs exactly the script you type. The default prints synthetic verl-format metric lines over ~6 s (a smoke test of connectors, logs and charts; it trains nothing).',
  source: 'Loupe (your script)',
  schema: CustomScriptSchema,
  build(p): TemplateOutput {
    return { templateId: 'custom-script', script: `${p.script}\n`, env: {}, files: [], services: [], resources: {}, metrics: { format: p.metricsFormat }, notes: [] };
  },
};

export const TEMPLATES = [verlToolPixelReasonerTemplate, pixelReasonerRlTemplate, msSwiftVsiTemplate, deepEyesTemplate, pyvisionRlTemplate, judgeServerTemplate, loupeTinyTemplate, customScriptTemplate] as const;

export class TemplateParamsError extends Error {
  constructor(
    readonly templateId: string,
    readonly issues: Array<{ path: string; message: string }>,
  ) {
    super(`${templateId}: ${issues.map((i) => `${i.path || '(params)'}: ${i.message}`).join('; ')}`);
    this.name = 'TemplateParamsError';
  }
}

export function getTemplate(id: string): JobTemplate {
  const t = TEMPLATES.find((x) => x.id === id);
  if (!t) throw new Error(`unknown training template ${JSON.stringify(id)}; known: ${TEMPLATES.map((x) => x.id).join(', ')}`);
  return t as unknown as JobTemplate;
}

/** Validate params (defaults filled) and build; bad params → TemplateParamsError naming each field. */
export function buildTemplate(id: string, params: unknown): TemplateOutput {
  const t = getTemplate(id);
  const r = t.schema.safeParse(params ?? {});
  if (!r.success) throw new TemplateParamsError(id, r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })));
  return t.build(r.data);
}

/** Defaults of a template (for the UI form). */
export function templateDefaults(id: string, required: Record<string, unknown> = {}): unknown {
  return getTemplate(id).schema.parse(required);
}
