/**
 * A trajectory as one self-contained HTML page: every image inlined as a data URL, boxes drawn as SVG
 * over the image they target, no scripts and no external requests, so it opens anywhere (mail it, put
 * it in a slide deck) and shows exactly what the model saw and did.
 */
import type { Box, MediaRef, ToolCallRecord, Trajectory } from '../contract/trajectory';
import { cellNorm, heatColor, layerMap, type AttentionMaps } from '../contract/attention';
import { combinedImages } from './storyboard';

export interface HtmlExportOptions {
  title?: string;
  /** Data URL (`data:image/png;base64,…`) of every media id the trajectory names. */
  dataUrls: ReadonlyMap<string, string>;
  /** Shown in the footer (e.g. the run id and engine). */
  source?: string;
  /** Attention maps by turn index (the ones looked at in the app): drawn under that step's box (mean over layers). */
  attention?: ReadonlyMap<number, AttentionMaps>;
}

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** Every media id the page shows (question media as the model saw them, produced media). */
export function trajectoryMediaIds(t: Trajectory): string[] {
  const ids = new Set<string>();
  for (const m of t.media) ids.add(m.id);
  for (const turn of t.turns) for (const m of turn.call?.produced ?? []) ids.add(m.id);
  return [...ids];
}

function pct(v: number): string {
  return `${(Math.max(0, Math.min(1, v)) * 100).toFixed(3)}%`;
}

function boxRect(b: Box, cls: string): string {
  return `<rect class="${cls}" x="${pct(b[0])}" y="${pct(b[1])}" width="${pct(b[2] - b[0])}" height="${pct(b[3] - b[1])}"/>`;
}

function img(m: MediaRef, opts: HtmlExportOptions, alt: string, overlay = ''): string {
  const src = opts.dataUrls.get(m.id);
  if (!src) return `<div class="missing">image ${escapeHtml(m.id)} is not in the workspace</div>`;
  return `<figure class="shot" style="aspect-ratio:${m.width}/${m.height}"><img src="${src}" alt="${escapeHtml(alt)}" width="${m.width}" height="${m.height}"/>${overlay ? `<svg class="ov" xmlns="http://www.w3.org/2000/svg">${overlay}</svg>` : ''}</figure>`;
}

/** The mean map as SVG cells (under the boxes), and the line that says what it is. */
function heatCells(m: AttentionMaps): { svg: string; label: string } {
  const values = layerMap(m, 'mean');
  const max = Math.max(...values, 1e-12);
  const cells = values.map((v, i) => {
    const b = cellNorm(m.grid, Math.floor(i / m.grid.w), i % m.grid.w);
    const [r, g, bl] = heatColor(v / max);
    return `<rect x="${pct(b[0])}" y="${pct(b[1])}" width="${pct(b[2] - b[0])}" height="${pct(b[3] - b[1])}" fill="rgb(${r},${g},${bl})"/>`;
  });
  const stops = [0, 0.2, 0.4, 0.6, 0.8, 1].map((x) => { const [r, g, b] = heatColor(x); return `rgb(${r},${g},${b}) ${x * 100}%`; }).join(',');
  return {
    svg: `<g class="heat" opacity="0.6" shape-rendering="crispEdges">${cells.join('')}</g>`,
    label: `<div class="lbl attn">attention map (where it looked): mean of ${m.layers.length} layers, from the ${m.queryTokens} tokens <code>${escapeHtml(m.queryText.trim())}</code>, ${m.grid.w}×${m.grid.h} cells of 28 px on ${m.imageSize[0]}×${m.imageSize[1]} · <span class="scale" style="background:linear-gradient(to right,${stops})"></span> 0 – ${(max * 100).toFixed(1)} % per cell</div>`,
  };
}

function callBlock(c: ToolCallRecord, step: number, images: MediaRef[], opts: HtmlExportOptions, maps?: AttentionMaps): string {
  const parts: string[] = [];
  parts.push(`<div class="call"><span class="tag">${escapeHtml(c.name ?? 'unparsed call')}</span>${c.edited ? '<span class="tag edited">edited by a person</span>' : ''}<code>${escapeHtml(c.arguments !== undefined ? JSON.stringify(c.arguments) : c.raw.trim())}</code></div>`);
  if (c.error !== undefined) parts.push(`<div class="err" data-error>error: <pre>${escapeHtml(c.error)}</pre></div>`);
  const target = c.targetIndex !== undefined ? images[c.targetIndex] : undefined;
  if (target && c.bboxNormalized) {
    const heat = maps && maps.imageIndex === c.targetIndex ? heatCells(maps) : null;
    const ov = `${heat ? heat.svg : ''}${c.bboxPadded ? boxRect(c.bboxPadded, 'pad') : ''}${boxRect(c.bboxNormalized, 'box')}<text x="${pct(c.bboxNormalized[0])}" y="${pct(c.bboxNormalized[1])}" dy="-4">${step}</text>`;
    parts.push(`<div class="row"><div>${heat ? heat.label : ''}<div class="lbl">image ${c.targetIndex! + 1} (${target.width}×${target.height}), box ${c.bboxMode ?? ''} ${c.bboxRaw ? escapeHtml(JSON.stringify(c.bboxRaw)) : '—'}; padded ${c.bboxPadded ? escapeHtml(JSON.stringify(c.bboxPadded.map((v) => +v.toFixed(4)))) : '—'}</div>${img(target, opts, `step ${step} target`, ov)}</div>`);
    for (const p of c.produced) parts.push(`<div><div class="lbl">crop ${p.width}×${p.height}</div>${img(p, opts, `step ${step} crop`)}</div>`);
    parts.push('</div>');
  } else if (c.frameIndices) {
    parts.push(`<div class="lbl">frames ${escapeHtml(c.frameIndices.map((i) => i + 1).join(', '))}</div><div class="strip">${c.produced.map((p, i) => `<div><div class="lbl">#${(c.frameIndices?.[i] ?? i) + 1}</div>${img(p, opts, `frame ${i}`)}</div>`).join('')}</div>`);
  }
  return parts.join('');
}

export function renderTrajectoryHtml(t: Trajectory, opts: HtmlExportOptions): string {
  const images = combinedImages(t);
  const title = opts.title ?? `Loupe trajectory: ${t.question}`;
  let step = 0;
  const turns = t.turns
    .map((turn) => {
      const isCall = !!turn.call;
      if (isCall) step += 1;
      const meta = [turn.latencyMs !== undefined ? `${Math.round(turn.latencyMs)} ms` : '', turn.completionTokens !== undefined ? `${turn.completionTokens} tokens` : ''].filter(Boolean).join(' · ');
      const final = !isCall && turn === t.turns.at(-1) && t.finalText !== undefined;
      return `<section class="turn${final ? ' final' : ''}"><h2>${isCall ? `Step ${step}` : final ? 'Answer' : `Turn ${turn.index + 1}`}<small>${escapeHtml(meta)}</small></h2><pre class="text">${escapeHtml(turn.text)}</pre>${turn.call ? callBlock(turn.call, step, images, opts, opts.attention?.get(turn.index)) : ''}${turn.observation ? `<div class="obs">observation: <pre>${escapeHtml(turn.observation)}</pre></div>` : ''}</section>`;
    })
    .join('\n');
  const media = t.media.map((m, i) => `<div><div class="lbl">${t.isVideo ? `frame ${i + 1}` : `image ${i + 1}`} (${m.width}×${m.height})</div>${img(m, opts, `question image ${i + 1}`)}</div>`).join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<title>${escapeHtml(title)}</title>
<style>
body{font:15px/1.5 system-ui,'DejaVu Sans',sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:0 0 8px;display:flex;gap:12px;align-items:baseline}h2 small{color:#5d6673;font-weight:400}
.turn{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:14px 16px;margin:14px 0}
.turn.final{border:2px solid #15803d;background:#f0fdf4}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font:13px/1.45 ui-monospace,'DejaVu Sans Mono',monospace}
.shot{position:relative;margin:0;max-width:100%;width:min(100%,${'520px'})}.shot img{display:block;width:100%;height:auto}
.ov{position:absolute;inset:0;width:100%;height:100%;overflow:visible}
.ov .box{fill:none;stroke:#f59e0b;stroke-width:3}.ov .pad{fill:none;stroke:#2563eb;stroke-width:2;stroke-dasharray:6 4}
.ov text{fill:#f59e0b;font:700 16px sans-serif;paint-order:stroke;stroke:#000;stroke-width:3px}
.row,.strip,.media{display:flex;gap:14px;flex-wrap:wrap;align-items:flex-start;margin-top:8px}.strip .shot{width:160px}
.lbl{color:#5d6673;font-size:12px;margin-bottom:2px}.tag{background:#dbe6fd;color:#2563eb;border-radius:4px;padding:1px 6px;margin-right:6px;font-size:12px}.tag.edited{background:#fef3c7;color:#b45309}
.call code{font-size:12px}.err{color:#c02626;background:#fee2e2;border:1px solid #fca5a5;border-radius:6px;padding:6px 8px;margin-top:6px}
.obs{color:#5d6673;margin-top:6px}.attn code{font-size:11px}.scale{display:inline-block;width:90px;height:9px;vertical-align:middle;border:1px solid #0006}.missing{color:#c02626}footer{color:#5d6673;font-size:12px;margin-top:24px}
</style></head>
<body><main>
<h1>${escapeHtml(t.question)}</h1>
<div class="lbl">dialect ${escapeHtml(t.dialect)} · prompt ${escapeHtml(t.prompt)} · stop: ${escapeHtml(t.stopReason)}${t.totalTokens !== undefined ? ` · ${t.totalTokens} tokens` : ''}${t.latencyMs !== undefined ? ` · ${Math.round(t.latencyMs)} ms` : ''}</div>
${t.error ? `<div class="err">${escapeHtml(t.error)}</div>` : ''}
<div class="media">${media}</div>
${turns}
<footer>Exported by Loupe${opts.source ? ` · ${escapeHtml(opts.source)}` : ''}</footer>
</main></body></html>
`;
}
