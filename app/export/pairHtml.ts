/**
 * A Demo pair as one self-contained HTML page: the two trajectory pages (renderTrajectoryHtml's output, images
 * inlined) in two columns under one heading, A's boxes amber and B's violet as in the app. Still no scripts and no
 * external requests, so a talk's slides can embed it offline.
 */
import { escapeHtml } from './html';

/** One column: the trajectory page of that side and what the heading says about it. */
export interface PairColumn {
  /** `A` or `B`. */
  side: 'A' | 'B';
  /** The configuration, e.g. `loupe-tiny · vcot`. */
  label: string;
  /** A full page from renderTrajectoryHtml. */
  page: string;
  answer?: string;
  latencyMs?: number;
  error?: string;
}

function between(s: string, open: string, close: string): string {
  const i = s.indexOf(open);
  const j = i < 0 ? -1 : s.indexOf(close, i + open.length);
  return i < 0 || j < 0 ? '' : s.slice(i + open.length, j);
}

export function renderPairHtml(question: string, columns: [PairColumn, PairColumn], source?: string): string {
  // Both pages share one stylesheet (the same renderer wrote them); their bodies become the columns.
  const style = between(columns[0].page, '<style>', '</style>');
  const head = (c: PairColumn) =>
    `<div class="side-head"><span class="side-tag side-tag-${c.side.toLowerCase()}">${c.side}</span> <strong>${escapeHtml(c.label)}</strong>` +
    `<div class="lbl">answer: ${c.answer !== undefined ? `<code>${escapeHtml(c.answer.trim().slice(-200))}</code>` : '—'}${c.latencyMs !== undefined ? ` · ${(c.latencyMs / 1000).toFixed(1)} s` : ''}</div>` +
    `${c.error ? `<div class="err">${escapeHtml(c.error)}</div>` : ''}</div>`;
  const col = (c: PairColumn) => `<section class="side side-${c.side.toLowerCase()}" data-side="${c.side}">${head(c)}<main>${between(c.page, '<main>', '</main>')}</main></section>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<title>${escapeHtml(`Loupe side by side: ${question}`)}</title>
<style>${style}
.top{padding:20px 24px 0}.legend{display:flex;gap:16px;color:#5d6673;font-size:13px}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:16px;padding:0 24px 24px}.pair main{max-width:none;padding:0}.pair main>h1{display:none}
.side-head{position:sticky;top:0;background:#f6f7f9;padding:10px 0;z-index:1;border-bottom:1px solid #dde1e7}
.side-tag{display:inline-block;min-width:22px;text-align:center;border-radius:4px;color:#fff;font-weight:700}.side-tag-a{background:#f59e0b}.side-tag-b{background:#7c3aed}
.side-b .ov .box{stroke:#7c3aed}.side-b .ov text{fill:#7c3aed}
@media (max-width:900px){.pair{grid-template-columns:1fr}}
</style></head>
<body><div class="top"><h1>${escapeHtml(question)}</h1><div class="legend"><span><span class="side-tag side-tag-a">A</span> ${escapeHtml(columns[0].label)}</span><span><span class="side-tag side-tag-b">B</span> ${escapeHtml(columns[1].label)}</span></div></div>
<div class="pair">${col(columns[0])}${col(columns[1])}</div>
<footer style="padding:0 24px 24px">Exported by Loupe${source ? ` · ${escapeHtml(source)}` : ''}</footer>
</body></html>
`;
}
