/**
 * "Where it looked": the attention map of a crop turn drawn over the image (AttentionHeat, inside the ImageViewer's
 * stage, under the boxes) and its controls in the step card (AttentionControls: load, layer or mean, opacity, the
 * colour scale with its values). Geometry and colours come from app/contract/attention, as in the HTML export.
 */
import { useEffect, useMemo, useRef } from 'react';
import type { AttentionMaps, Box, LayerChoice, Trajectory } from '../../../../app/contract';
import { heatColor, layerMap, placements, toBaseNorm } from '../../../../app/contract/attention';
import { attentionKey, useAttentionStore } from '../../stores/useAttentionStore';

const pct = (v: number) => `${(v * 100).toFixed(4)}%`;

/** Where a map over image `maps.imageIndex` lies on the shown image (normalized), or null when it is not on it. */
export function heatRect(t: Trajectory, maps: AttentionMaps, shownIndex: number): Box | null {
  if (shownIndex === maps.imageIndex) return [0, 0, 1, 1];
  const p = placements(t);
  const from = p[maps.imageIndex];
  const shown = p[shownIndex];
  // on an initial image: the crop's footprint through the crop tool's boxes (a crop shown on its original)
  if (!from || !shown || shownIndex >= t.media.length || from.base !== shownIndex) return null;
  const base = t.media[shownIndex]!;
  return toBaseNorm(from, [base.width, base.height], [0, 0, 1, 1]);
}

/** The map as a canvas of grid.w × grid.h pixels, one per merged vision token, stretched over `rect` without smoothing. */
export function AttentionHeat({ maps, layer, opacity, rect }: { maps: AttentionMaps; layer: LayerChoice; opacity: number; rect: Box }) {
  const ref = useRef<HTMLCanvasElement>(null);
  const values = useMemo(() => layerMap(maps, layer), [maps, layer]);
  useEffect(() => {
    const c = ref.current;
    const ctx = c?.getContext('2d');
    if (!c || !ctx) return;
    const { h, w } = maps.grid;
    const img = ctx.createImageData(w, h);
    const max = Math.max(...values, 1e-12);
    values.forEach((v, i) => {
      const [r, g, b] = heatColor(v / max);
      img.data.set([r, g, b, 255], i * 4);
    });
    ctx.putImageData(img, 0, 0);
  }, [maps, values]);
  return (
    <canvas
      ref={ref}
      className="tv-heat"
      data-testid="attention-heat"
      width={maps.grid.w}
      height={maps.grid.h}
      style={{ left: pct(rect[0]), top: pct(rect[1]), width: pct(rect[2] - rect[0]), height: pct(rect[3] - rect[1]), opacity }}
    />
  );
}

/** The colour scale: 0 to the shown map's largest cell value (its share of the image's attention). */
export function AttentionLegend({ max }: { max: number }) {
  const stops = Array.from({ length: 11 }, (_, i) => {
    const [r, g, b] = heatColor(i / 10);
    return `rgb(${r},${g},${b}) ${i * 10}%`;
  }).join(', ');
  return (
    <div className="tv-attn-legend" data-testid="attention-legend">
      <span>0</span>
      <span className="tv-attn-scale" style={{ background: `linear-gradient(to right, ${stops})` }} />
      <span>{(max * 100).toFixed(1)} % of the image’s attention per cell</span>
    </div>
  );
}

/** The step card's control for a crop turn: ask for the map, then pick the layer and the opacity. */
export function AttentionControls({ source, turnIndex }: { source: { runId: string; branch: string }; turnIndex: number }) {
  const key = attentionKey(source.runId, source.branch, turnIndex);
  const entry = useAttentionStore((s) => s.entries[key]);
  const layer = useAttentionStore((s) => s.layer);
  const opacity = useAttentionStore((s) => s.opacity);
  const shown = useAttentionStore((s) => s.shown);
  const load = useAttentionStore((s) => s.load);
  const setView = useAttentionStore((s) => s.set);
  const maps = entry?.maps;
  const max = useMemo(() => (maps ? Math.max(...layerMap(maps, layer)) : 0), [maps, layer]);
  // Clicks here reach the card too: the map shows under the active step, so using a step's controls selects it.
  return (
    <div className="tv-attn" data-testid="attention-controls">
      {!entry || entry.status === 'error' ? (
        <button type="button" className="btn btn-sm" data-testid="attention-load" onClick={() => void load(source.runId, source.branch, turnIndex)} title="Attention from the tokens that wrote this box onto the image (local ONNX models)">
          Where it looked
        </button>
      ) : null}
      {entry?.status === 'loading' ? <span className="muted" data-testid="attention-state">computing the attention map…</span> : null}
      {entry?.status === 'unavailable' ? <span className="muted" data-testid="attention-state">{entry.message}</span> : null}
      {entry?.status === 'error' ? <span className="tv-badge-error" data-testid="attention-state">{entry.message}</span> : null}
      {maps ? (
        <>
          <label className="tv-toggle">
            <input type="checkbox" checked={shown} onChange={(e) => setView({ shown: e.target.checked })} data-testid="attention-shown" /> map
          </label>
          <label>
            layer{' '}
            <select value={String(layer)} onChange={(e) => setView({ layer: e.target.value === 'mean' ? 'mean' : Number(e.target.value) })} data-testid="attention-layer">
              <option value="mean">mean of {maps.layers.length}</option>
              {maps.layers.map((_, i) => (
                <option key={i} value={i}>{i + 1}</option>
              ))}
            </select>
          </label>
          <label>
            opacity <input type="range" min={0} max={1} step={0.05} value={opacity} onChange={(e) => setView({ opacity: Number(e.target.value) })} data-testid="attention-opacity" />
          </label>
          <AttentionLegend max={max} />
          <span className="muted tv-attn-meta" data-testid="attention-meta">
            from {maps.queryTokens} token{maps.queryTokens === 1 ? '' : 's'} <code>{maps.queryText.trim()}</code> · {maps.grid.w}×{maps.grid.h} cells of 28 px on {maps.imageSize[0]}×{maps.imageSize[1]}
          </span>
        </>
      ) : null}
    </div>
  );
}
