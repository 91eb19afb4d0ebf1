/**
 * The one geometry that places an attention map on an image (app/contract/attention.ts), against hand-computed cases:
 * a non-square grid, crops and crops of crops (through the call's cropBox and the zoom resize), and synthetic maps
 * whose answer is known, so a transposed, flipped or merge-offset layout fails.
 */
import { describe, expect, it } from 'vitest';
import {
  boxSpan,
  cellNorm,
  cellsOnBase,
  heatColor,
  layerMap,
  massInBox,
  peakIndex,
  peakChance,
  peakInBox,
  placements,
  toBaseNorm,
  uniformMass,
} from '../../../app/contract/attention';
import { scoreMaps } from '../../../app/attention/measure';
import type { Box, Trajectory } from '../../../app/contract/trajectory';

const close = (a: readonly number[], b: readonly number[]) => a.forEach((v, i) => expect(v).toBeCloseTo(b[i]!, 9));

/** A one-hot map on a grid: all mass on cell (r, c). */
function oneHot(grid: { h: number; w: number }, r: number, c: number): number[] {
  const m = new Array<number>(grid.h * grid.w).fill(0);
  m[r * grid.w + c] = 1;
  return m;
}

describe('attention map geometry', () => {
  it('cell (r, c) of a 3×5 grid covers columns c/5..(c+1)/5 and rows r/3..(r+1)/3 (row-major, x before y)', () => {
    close(cellNorm({ h: 3, w: 5 }, 1, 3), [0.6, 1 / 3, 0.8, 2 / 3]);
    close(cellNorm({ h: 3, w: 5 }, 2, 0), [0, 2 / 3, 0.2, 1]);
  });

  it('a one-hot map is found in its box and nowhere else: transposed, flipped or merge-offset layouts fail', () => {
    // a non-square image: 140×84 px seen by the vision tower = 10×6 patches = 5×3 merged cells of 28 px
    const grid = { h: 3, w: 5 };
    const cells: Box[] = [];
    for (let r = 0; r < grid.h; r++) for (let c = 0; c < grid.w; c++) cells.push(cellNorm(grid, r, c));
    const target: Box = [84 / 140, 28 / 84, 112 / 140, 56 / 84]; // pixels [84, 28, 112, 56): cell (1, 3)
    const map = oneHot(grid, 1, 3);
    expect(massInBox(map, cells, target)).toBeCloseTo(1, 12);
    expect(peakInBox(map, cells, target)).toBe(true);
    // the same values read column-major (a transpose), flipped either way, or one cell off (a merge offset) all miss
    const transposed = new Array<number>(15).fill(0);
    transposed[3 * grid.h + 1] = 1;
    const flippedX = oneHot(grid, 1, 4 - 3);
    const flippedY = oneHot(grid, 2 - 1, 3); // row 1 of 3 is its own mirror: use a row that is not
    const flippedY2 = oneHot(grid, 2 - 0, 3);
    const offset = oneHot(grid, 1, 2);
    for (const wrong of [transposed, flippedX, flippedY2, offset]) {
      expect(massInBox(wrong, cells, target)).toBe(0);
      expect(peakInBox(wrong, cells, target)).toBe(false);
    }
    expect(massInBox(flippedY, cells, target)).toBe(1); // sanity: the middle row maps onto itself
    // and the in-thread measure (scoreMaps) agrees: layer 0 one-hot in the box, layer 1 off by one cell
    const s = scoreMaps([map, offset], grid, target);
    expect(s.inBox).toEqual([1, 0, 0.5]);
    expect(s.peakHit).toEqual([true, false, false]); // the mean map ties (1, 2) and (1, 3): a tie keeps the first cell, (1, 2)
  });

  it('a peak hits a target smaller than its cell when the cell touches it; the chance is the share of touching cells', () => {
    const grid = { h: 3, w: 5 };
    const cells: Box[] = [];
    for (let r = 0; r < grid.h; r++) for (let c = 0; c < grid.w; c++) cells.push(cellNorm(grid, r, c));
    const tiny: Box = [0.65, 0.4, 0.7, 0.5]; // inside cell (1, 3), far smaller than it
    expect(peakInBox(oneHot(grid, 1, 3), cells, tiny)).toBe(true);
    expect(peakInBox(oneHot(grid, 1, 2), cells, tiny)).toBe(false); // the neighbour only shares an edge with the cell
    expect(peakChance(cells, tiny)).toBeCloseTo(1 / 15, 12);
    expect(peakChance(cells, [0.55, 0.3, 0.65, 0.4])).toBeCloseTo(4 / 15, 12); // across a corner: four cells
  });

  it('partial overlap counts the cell’s covered fraction; the uniform map scores the box’s area', () => {
    const grid = { h: 2, w: 2 };
    const cells = [0, 1, 2, 3].map((i) => cellNorm(grid, Math.floor(i / 2), i % 2));
    const uniform = [0.25, 0.25, 0.25, 0.25];
    const box: Box = [0.25, 0.25, 0.75, 0.5]; // half of each top cell's width, half its height
    expect(massInBox(uniform, cells, box)).toBeCloseTo(0.125, 12);
    expect(uniformMass(box)).toBeCloseTo(0.125, 12);
    expect(uniformMass([-0.5, -0.5, 0.5, 0.5])).toBeCloseTo(0.25, 12);
    expect(peakIndex([0.1, 0.4, 0.4, 0.1])).toBe(1);
  });

  it('places a crop’s cells on the initial image through cropBox and the zoom resize, and a crop of a crop', () => {
    // initial image 980×588; turn 0 crops [196, 147, 490, 441] (294×294 px) and the tool resizes it to 588×588;
    // turn 1 crops [294, 0, 588, 294] of that crop, resized to 588×588 again
    const t = {
      isVideo: false,
      media: [{ id: 'a.png', width: 980, height: 588 }],
      turns: [
        { index: 0, text: '', call: { raw: '', name: 'crop_image_normalized', targetIndex: 0, cropBox: [196, 147, 490, 441] as Box, produced: [{ id: 'c1.png', width: 588, height: 588 }] } },
        { index: 1, text: '', call: { raw: '', name: 'crop_image_normalized', targetIndex: 1, cropBox: [294, 0, 588, 294] as Box, produced: [{ id: 'c2.png', width: 588, height: 588 }] } },
      ],
    } as unknown as Trajectory;
    const p = placements(t);
    expect(p).toHaveLength(3);
    const base: [number, number] = [980, 588];
    // crop 1, merged cell (0, 0) of its 21×21 grid: crop px [0, 0, 28, 28] → initial px [196, 147, 210, 161]
    close(toBaseNorm(p[1]!, base, cellNorm({ h: 21, w: 21 }, 0, 0)), [196 / 980, 147 / 588, 210 / 980, 161 / 588]);
    // its last cell (20, 20): crop px [560, 560, 588, 588] → [476, 427, 490, 441]
    close(toBaseNorm(p[1]!, base, cellNorm({ h: 21, w: 21 }, 20, 20)), [476 / 980, 427 / 588, 490 / 980, 441 / 588]);
    // crop 2, cell (0, 0): crop-2 px [0, 0, 28, 28] → crop-1 px [294, 0, 308, 14] → initial [343, 147, 350, 154]
    close(toBaseNorm(p[2]!, base, cellNorm({ h: 21, w: 21 }, 0, 0)), [343 / 980, 147 / 588, 350 / 980, 154 / 588]);
    // the whole crop-2 grid spans exactly crop 2's footprint on the initial image
    const cells = cellsOnBase({ grid: { h: 21, w: 21 } }, p[2]!, base);
    close(cells[0]!.slice(0, 2), [343 / 980, 147 / 588]);
    close(cells.at(-1)!.slice(2), [490 / 980, 294 / 588]);
  });

  it('frames and unknown boxes have no placement', () => {
    const t = {
      isVideo: false,
      media: [{ id: 'a.png', width: 100, height: 100 }],
      turns: [{ index: 0, text: '', call: { raw: '', name: 'crop_image', targetIndex: 0, produced: [{ id: 'c.png', width: 50, height: 50 }] } }],
    } as unknown as Trajectory;
    expect(placements(t)[1]).toBeNull();
    expect(placements({ ...t, isVideo: true } as Trajectory)[0]).toBeNull();
  });

  it('the mean layer averages normalized layers; the colour scale runs dark to light and clamps', () => {
    expect(layerMap({ layers: [[1, 0], [0, 1]] }, 'mean')).toEqual([0.5, 0.5]);
    expect(layerMap({ layers: [[1, 0], [0, 1]] }, 1)).toEqual([0, 1]);
    const lum = (c: [number, number, number]) => c[0] + c[1] + c[2];
    expect(lum(heatColor(0))).toBeLessThan(lum(heatColor(0.5)));
    expect(lum(heatColor(0.5))).toBeLessThan(lum(heatColor(1)));
    expect(heatColor(2)).toEqual(heatColor(1));
    expect(heatColor(Number.NaN)).toEqual(heatColor(0));
  });

  it('finds the box the model wrote inside its call', () => {
    const text = 'The ring is up left. Let me zoom in.\n<tool_call>\n{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.1, 0.2, 0.3, 0.4], "target_image": 1}}\n</tool_call>';
    const raw = '{"name": "crop_image_normalized", "arguments": {"bbox_2d": [0.1, 0.2, 0.3, 0.4], "target_image": 1}}';
    const s = boxSpan(text, raw)!;
    expect(text.slice(s[0], s[1])).toBe('[0.1, 0.2, 0.3, 0.4]');
    expect(boxSpan('no call here', 'missing')).toBeNull();
    const noBox = boxSpan('x {"name": "crop"} y', '{"name": "crop"}')!;
    expect(noBox).toEqual([2, 18]);
  });
});
