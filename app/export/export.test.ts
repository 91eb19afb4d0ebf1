import { describe, expect, it } from 'vitest';
import type { Trajectory } from '../contract/trajectory';
import { buildStoryboard, combinedImages, renderTrajectoryHtml, trajectoryMediaIds } from './index';

const img = (id: string, w = 100, h = 50) => ({ id: `${id.repeat(64).slice(0, 64)}.png`, width: w, height: h });
const Q = img('a', 1000, 500);
const C1 = img('b', 400, 300);
const C2 = img('c', 300, 300);

const traj: Trajectory = {
  dialect: 'pixel-reasoner',
  prompt: 'vcot',
  media: [Q],
  originals: [Q],
  isVideo: false,
  question: 'Is <b>this</b> & that "safe"?',
  turns: [
    { index: 0, text: 'zoom <tool_call>…</tool_call>', call: { raw: '{}', name: 'crop_image_normalized', arguments: { bbox_2d: [0.1, 0.1, 0.5, 0.5] }, targetIndex: 0, bboxMode: 'normalized', bboxRaw: [0.1, 0.1, 0.5, 0.5], bboxNormalized: [0.1, 0.1, 0.5, 0.5], bboxPadded: [0, 0, 0.6, 0.6], cropBox: [0, 0, 600, 300], produced: [C1] }, observation: 'Here is the cropped image (Image Size: 400x300):' },
    { index: 1, text: 'again', call: { raw: '{}', name: 'crop_image_normalized', arguments: {}, targetIndex: 1, bboxMode: 'normalized', bboxRaw: [0.2, 0.2, 0.4, 0.4], bboxNormalized: [0.2, 0.2, 0.4, 0.4], produced: [C2] } },
    { index: 2, text: 'bad', call: { raw: '{"x', name: null, produced: [], error: 'Expecting value' }, observation: '\nExecution error:\nExpecting value\n' },
    { index: 3, text: '\\boxed{yes}' },
  ],
  stopReason: 'answer',
  finalText: '\\boxed{yes}',
};

describe('trajectory export', () => {
  it('lists images in the loop order: question media, then what each call produced', () => {
    expect(combinedImages(traj).map((m) => m.id)).toEqual([Q.id, C1.id, C2.id]);
    expect(trajectoryMediaIds(traj)).toEqual([Q.id, C1.id, C2.id]);
  });

  it('storyboard: question, box then crop per crop call, the error, the answer', () => {
    const frames = buildStoryboard(traj);
    expect(frames.map((f) => [f.media.id.slice(0, 1), f.step ?? null, f.box ? 'box' : null])).toEqual([
      ['a', null, null],
      ['a', 1, 'box'],
      ['b', null, null],
      ['b', 2, 'box'],
      ['c', null, null],
      ['a', null, null],
      ['a', null, null],
    ]);
    expect(frames[5]!.caption).toContain('error');
    expect(frames.at(-1)!.caption).toContain('Answer: \\boxed{yes}');
  });

  it('HTML: escapes text, inlines only given data URLs, draws each box on its target, shows the exact error', () => {
    const urls = new Map([Q, C1, C2].map((m) => [m.id, `data:image/png;base64,${m.id.slice(0, 4)}`]));
    const html = renderTrajectoryHtml(traj, { dataUrls: urls });
    expect(html).toContain('Is &lt;b&gt;this&lt;/b&gt; &amp; that &quot;safe&quot;?');
    expect(html).not.toContain('<b>this</b>');
    expect(html).not.toMatch(/src="(?!data:)/);
    expect(html.match(/<rect class="box"/g)).toHaveLength(2);
    expect(html).toContain('Execution error:\nExpecting value');
    expect(html).toContain('class="turn final"');
    const missing = renderTrajectoryHtml(traj, { dataUrls: new Map() });
    expect(missing).toContain(`image ${C1.id} is not in the workspace`);
  });
});
