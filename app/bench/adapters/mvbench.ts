/**
 * MVBench (20 video MCQ tasks, OpenGVLab/MVBench).
 * Layout: `json/<task>.json` (a JSON array of `{video, question, candidates[], answer, start?, end?}`;
 * `answer` is the **text** of the correct candidate) and videos under `video/<task folder>/` (the folder
 * table of `mvbench.ipynb`, e.g. `clevrer/video_validation/`); `episodic_reasoning` videos are frame folders.
 * Pre-extracted frames (Pixel Reasoner style) are used when `frames/<task>/<video stem>/` exists.
 * `opts.tasks`: a list of task names to keep. Gold = the letter of `answer` in `candidates`.
 * Scorer `mc.mvbench` (lmms-eval `mcq_acc`).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { BenchDataError, type BenchmarkAdapter, type BenchSample, type LoadOptions, type LoadResult } from '../types';
import { applyLimit, displayPath, readJsonFile, RecordReader } from './io';
import { noData, splitRoot } from './common';
import { listFrames } from './frames';
import { letterOf } from './options';

const BENCH = 'mvbench';
const SCORER = 'mc.mvbench';

/** task → [video folder, is a frame-folder task]. */
export const MVBENCH_TASKS: Readonly<Record<string, readonly [string, boolean]>> = {
  action_sequence: ['star/Charades_v1_480', false],
  action_prediction: ['star/Charades_v1_480', false],
  action_antonym: ['ssv2_video', false],
  fine_grained_action: ['Moments_in_Time_Raw/videos', false],
  unexpected_action: ['FunQA_test/test', false],
  object_existence: ['clevrer/video_validation', false],
  object_interaction: ['star/Charades_v1_480', false],
  object_shuffle: ['perception/videos', false],
  moving_direction: ['clevrer/video_validation', false],
  action_localization: ['sta/sta_video', false],
  scene_transition: ['scene_qa/video', false],
  action_count: ['perception/videos', false],
  moving_count: ['clevrer/video_validation', false],
  moving_attribute: ['clevrer/video_validation', false],
  state_change: ['perception/videos', false],
  fine_grained_pose: ['nturgbd', false],
  character_order: ['perception/videos', false],
  egocentric_navigation: ['vlnqa', false],
  episodic_reasoning: ['tvqa/frames_fps3_hq', true],
  counterfactual_inference: ['clevrer/video_validation', false],
};

function loadTask(task: string, file: string, root: string, opts?: LoadOptions): BenchSample[] {
  const disp = displayPath(file, root);
  const data = readJsonFile(file, root);
  if (!Array.isArray(data)) throw new BenchDataError({ file: disp, problem: 'expected a JSON array of question records' });
  const [folder, isFrameTask] = MVBENCH_TASKS[task] ?? [task, false];
  return data.map((value, i) => {
    const rec = `record ${i}`;
    const r = new RecordReader(disp, rec, value);
    const candidates = r.stringArray('candidates', { nonEmpty: true });
    const answerText = r.string('answer');
    const idx = candidates.indexOf(answerText);
    if (idx < 0) r.fail('answer', `${JSON.stringify(answerText)} is not one of the candidates`);
    const video = r.string('video');
    const stem = video.replace(/\.[^./]+$/, '');
    const media: BenchSample['media'] = {};
    const pre = listFrames(path.join(root, 'frames', task, stem));
    const videoPath = [path.join(root, 'video', folder, video), path.join(root, folder, video), path.join(root, 'video', video)].find((p) => existsSync(p));
    if (isFrameTask) {
      const frames = pre.length ? pre : videoPath ? listFrames(videoPath) : [];
      if (frames.length) media.frames = frames;
    } else {
      if (videoPath) media.video = videoPath;
      if (pre.length) media.frames = pre;
    }
    if (!media.video && !media.frames && !opts?.skipMediaCheck) {
      r.fail('video', `media ${JSON.stringify(video)} not found under video/${folder}/, ${folder}/ or frames/${task}/${stem}/`);
    }
    return {
      qid: `${BENCH}-${task}.${i}`,
      bench: BENCH,
      category: task,
      question: r.string('question'),
      options: candidates,
      answer: letterOf(idx),
      media,
      isVideo: true,
      scorer: SCORER,
      extra: { video, start: r.optNumber('start'), end: r.optNumber('end'), answerText },
    };
  });
}

export const mvbenchAdapter: BenchmarkAdapter = {
  id: 'mvbench',
  title: 'MVBench',
  formats: ['json/<task>.json + video/<folder>/… (OpenGVLab/MVBench)', 'frames/<task>/<video stem>/*.jpg (pre-extracted frames)'],
  async load(dataDir: string, opts?: LoadOptions): Promise<LoadResult> {
    const { root, file } = splitRoot(dataDir);
    const jsonDir = file ? path.dirname(file) : existsSync(path.join(root, 'json')) ? path.join(root, 'json') : root;
    const base = file ? path.dirname(jsonDir) : root;
    const want = opts?.tasks;
    if (want !== undefined && (!Array.isArray(want) || !want.every((t) => typeof t === 'string'))) throw new Error('option tasks must be a list of task names');
    const tasks = file ? [path.basename(file, '.json')] : Object.keys(MVBENCH_TASKS).filter((t) => !want || (want as string[]).includes(t));
    const files: string[] = [];
    const samples: BenchSample[] = [];
    for (const t of tasks) {
      const f = path.join(jsonDir, `${t}.json`);
      if (!existsSync(f)) {
        if (want && (want as string[]).includes(t)) throw new BenchDataError({ file: displayPath(f, base), problem: `task file for ${t} not found` });
        continue;
      }
      files.push(displayPath(f, base));
      samples.push(...loadTask(t, f, base, opts));
    }
    if (!files.length) noData('MVBench', root, mvbenchAdapter.formats);
    return { samples: applyLimit(samples, opts?.limit), info: { files, format: 'mvbench.json', optionOrder: 'official' } };
  },
};
