/** The HTML export draws a looked-at attention map under its step's box: SVG cells at the map's grid, no scripts. */
import { describe, expect, it } from 'vitest';
import { renderTrajectoryHtml } from '../../../app/export';
import { heatColor, type AttentionMaps } from '../../../app/contract/attention';
import type { Trajectory } from '../../../app/contract/trajectory';

const t: Trajectory = {
  dialect: 'pixel-reasoner',
  prompt: 'vcot',
  media: [{ id: 'a.png', width: 140, height: 84 }],
  originals: [],
  isVideo: false,
  question: 'Which letter?',
  turns: [
    {
      index: 0,
      text: 'zoom',
      call: { raw: '{}', name: 'crop_image_normalized', targetIndex: 0, bboxNormalized: [0.6, 0.33, 0.8, 0.66], cropBox: [84, 28, 112, 56], produced: [] },
    },
  ],
  stopReason: 'answer',
};
const maps: AttentionMaps = { turnIndex: 0, imageIndex: 0, grid: { h: 3, w: 5 }, imageSize: [140, 84], layers: [[...new Array(8).fill(0), 1, ...new Array(6).fill(0)]], imageMass: [0.4], queryText: '[0.6, 0.33, 0.8, 0.66]', queryTokens: 9 };

describe('HTML export with an attention map', () => {
  it('draws 5×3 cells under the box, the hottest at cell (1, 3), and says what the map is', () => {
    const html = renderTrajectoryHtml(t, { dataUrls: new Map([['a.png', 'data:image/png;base64,AA==']]), attention: new Map([[0, maps]]) });
    const heat = /<g class="heat"[^>]*>(.*?)<\/g>/.exec(html)![1]!;
    const rects = heat.match(/<rect [^>]*\/>/g)!;
    expect(rects).toHaveLength(15);
    const [r, g, b] = heatColor(1);
    expect(rects[8]).toBe(`<rect x="60.000%" y="33.333%" width="20.000%" height="33.333%" fill="rgb(${r},${g},${b})"/>`);
    expect(html.indexOf('<g class="heat"')).toBeLessThan(html.indexOf('class="box"'));
    expect(html).toContain('attention map (where it looked): mean of 1 layers, from the 9 tokens <code>[0.6, 0.33, 0.8, 0.66]</code>, 5×3 cells of 28 px on 140×84');
    expect(html).not.toMatch(/<script/i);
    // without maps, the page is as before
    expect(renderTrajectoryHtml(t, { dataUrls: new Map([['a.png', 'data:image/png;base64,AA==']]) })).not.toContain('class="heat"');
  });
});
