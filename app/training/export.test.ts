import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SampleRecordSchema, type SampleRecord } from '../contract/trajectory';
import { exportSftTraces, sftTraceToMsSwift, toMsSwiftRow, toPixelReasonerRow, toVerlRow, writeJsonl, type RlItem } from './export';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'loupe-export-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const item: RlItem = { qid: 'vstar-12', question: 'What color is the umbrella?\n(A) red\n(B) blue', media: ['/data/img/12.jpg'], answer: 'A' };

function record(over: Partial<SampleRecord> & { turns?: unknown[]; stopReason?: string }): SampleRecord {
  const { turns, stopReason, ...rest } = over;
  return SampleRecordSchema.parse({
    qid: 'vstar-1',
    bench: 'vstar',
    question: 'Q?',
    answer: 'A',
    prediction: 'A',
    score: 1,
    correct: true,
    stop_reason: stopReason ?? 'answer',
    calls: 1,
    tool_errors: 0,
    trajectory: {
      dialect: 'pixel-reasoner',
      prompt: 'vcot',
      media: [{ id: 'aaa.png', width: 800, height: 600 }],
      question: 'Q?',
      system: 'SYS',
      userText: 'Q?\nGuidelines…',
      turns: turns ?? [
        {
          index: 0,
          text: 'Let me zoom.\n<tool_call>\n{"name":"crop_image_normalized","arguments":{"bbox_2d":[0.1,0.1,0.5,0.5],"target_image":1}}\n',
          call: { raw: '{"name":"crop_image_normalized"}', name: 'crop_image_normalized', produced: [{ id: 'bbb.png', width: 400, height: 300 }] },
          observation: 'Here is the cropped image (Image Size: 400x300):',
        },
        { index: 1, text: 'The answer is \\boxed{A}.' },
      ],
      stopReason: stopReason ?? 'answer',
    },
    ...rest,
  });
}

describe('RL rows', () => {
  it('verl row has the verl-tool parquet shape', () => {
    expect(toVerlRow(item, 3, { system: 'SYS', guideline: 'Guidelines: …', dataSource: 'loupe/vstar' })).toEqual({
      data_source: 'loupe/vstar',
      prompt: [
        { role: 'system', content: 'SYS' },
        { role: 'user', content: '<image>What color is the umbrella?\n(A) red\n(B) blue\n\nGuidelines: …' },
      ],
      images: [{ image: '/data/img/12.jpg' }],
      ability: 'visual_reasoning',
      reward_model: { style: 'rule', ground_truth: 'A' },
      extra_info: { split: 'train', index: 3, qid: 'vstar-12', is_video: false, images: ['/data/img/12.jpg'] },
    });
  });

  it('Pixel Reasoner and ms-swift rows; bad input names the row and the problem', () => {
    expect(toPixelReasonerRow(item)).toEqual({ question: item.question, image: ['/data/img/12.jpg'], is_video: false, answer: ['A'], qid: 'vstar-12' });
    const vsi: RlItem = { qid: 'vsibench-7', question: 'How many chairs?', media: ['/v/scene.mp4'], isVideo: true, answer: '4', extra: { question_type: 'object_counting' } };
    expect(toMsSwiftRow(vsi, { prefix: 'These are frames of a video.\n', suffix: '\nPlease answer the question using a single word or phrase.' })).toEqual({
      messages: [{ role: 'user', content: '<video>These are frames of a video.\nHow many chairs?\nPlease answer the question using a single word or phrase.' }],
      videos: ['/v/scene.mp4'],
      solution: '4',
      qid: 'vsibench-7',
      question_type: 'object_counting',
    });
    expect(() => toVerlRow({ ...item, media: ['rel/path.jpg'] }, 0, { system: '' })).toThrow(/verl row \(vstar-12\): media path "rel\/path.jpg" must be absolute/);
    expect(() => toPixelReasonerRow({ ...item, qid: 'nodash' })).toThrow(/<bench>-<id>/);
    expect(() => toMsSwiftRow({ ...item, answer: ' ' })).toThrow(/answer is empty/);
  });
});

describe('SFT traces from successful trajectories', () => {
  it('keeps correct, answered, error-free trajectories; re-adds the tool stop string; says why others were skipped', async () => {
    const recs = [
      record({ qid: 'vstar-1' }),
      record({ qid: 'vstar-2', correct: false, score: 0 }),
      record({ qid: 'vstar-3', stopReason: 'max_calls' }),
      record({ qid: 'vstar-4', turns: [{ index: 0, text: 'x', call: { raw: 'x', name: 'crop', produced: [], error: 'bad bbox' } }, { index: 1, text: 'A' }] }),
      { ...record({ qid: 'vstar-5' }), trajectory: undefined },
    ];
    const { traces, skipped } = exportSftTraces(recs, { mediaPath: (id) => `/ws/media/${id}` });
    expect(traces.map((t) => t.qid)).toEqual(['vstar-1']);
    expect(skipped).toEqual([
      { qid: 'vstar-2', reason: 'not correct (score 0)' },
      { qid: 'vstar-3', reason: 'stopped by max_calls, not a final answer' },
      { qid: 'vstar-4', reason: 'has a tool error' },
      { qid: 'vstar-5', reason: 'no trajectory stored' },
    ]);
    const m = traces[0]?.message_list ?? [];
    expect(m.map((x) => x.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(m[1]?.content).toEqual([{ type: 'image', image: '/ws/media/aaa.png' }, { type: 'text', text: 'Q?\nGuidelines…' }]);
    expect((m[2]?.content[0] as { text: string }).text.endsWith('</tool_call>')).toBe(true);
    expect(m[3]?.content).toEqual([{ type: 'text', text: 'Here is the cropped image (Image Size: 400x300):' }, { type: 'image', image: '/ws/media/bbb.png' }]);
    const swift = sftTraceToMsSwift(traces[0] as (typeof traces)[number]);
    expect(swift.images).toEqual(['/ws/media/aaa.png', '/ws/media/bbb.png']);
    expect(swift.messages[1]?.content).toBe('<image>Q?\nGuidelines…');
    const file = path.join(tmp, 'sft', 'traces.jsonl');
    expect(await writeJsonl(file, traces)).toBe(1);
    const back = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as unknown);
    expect(back).toEqual(traces);
  });
});
