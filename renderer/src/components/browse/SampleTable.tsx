import { memo, useEffect, useRef } from 'react';
import { useVirtualizer, type VirtualItem } from '@tanstack/react-virtual';
import { useShallow } from 'zustand/react/shallow';
import type { SortKey } from '../../../../app/contract';
import { PAGE_SIZE, useRunsStore } from '../../stores/useRunsStore';
import { useAppStore } from '../../stores/useAppStore';
import type { SampleRow } from '../../../../app/contract';

const COLUMNS: Array<{ field: SortKey['field'] | 'question'; label: string; width: string; num?: boolean }> = [
  { field: 'run', label: 'Run', width: '120px' },
  { field: 'bench', label: 'Bench', width: '90px' },
  { field: 'category', label: 'Category', width: '130px' },
  { field: 'question', label: 'Question', width: 'minmax(200px, 1fr)' },
  { field: 'correct', label: 'Correct', width: '70px' },
  { field: 'score', label: 'Score', width: '118px', num: true },
  { field: 'calls', label: 'Calls', width: '55px', num: true },
  { field: 'stop', label: 'Stop', width: '100px' },
  { field: 'tool_errors', label: 'Tool err.', width: '70px', num: true },
  { field: 'latency', label: 'Latency', width: '75px', num: true },
  { field: 'label', label: 'Labels', width: '140px' },
];
const TEMPLATE = COLUMNS.map((c) => c.width).join(' ');
const ROW_H = 30;
const OVERSCAN = 12;

/** Virtualized table of samples: renders only visible rows and fetches pages of rows on demand. */
export function SampleTable() {
  const total = useRunsStore((s) => s.total);
  const pages = useRunsStore((s) => s.pages);
  const sort = useRunsStore(useShallow((s) => s.sort));
  const ensurePage = useRunsStore((s) => s.ensurePage);
  const toggleSort = useRunsStore((s) => s.toggleSort);
  const navigate = useAppStore((s) => s.navigate);
  const parent = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({ count: total, getScrollElement: () => parent.current, estimateSize: () => ROW_H, overscan: OVERSCAN });
  const items = virtualizer.getVirtualItems();
  // Rows live in fixed screen slots, listed in slot order (row i in slot i mod slotCount): scrolling rewrites the
  // text of the row elements already there. Listed in row order (keyed by row, or by slot as before), React moves
  // ~20 row elements a frame to keep the DOM in row order, and a moved element is styled and laid out from scratch:
  // that was half of every scroll frame. slotCount covers every window the viewport can show, so a row keeps its
  // slot while on screen (it changes only when the table's height does). Screen readers get the order from
  // aria-rowindex.
  const viewport = virtualizer.scrollRect?.height ?? 0;
  const slotCount = Math.max(items.length, Math.ceil(viewport / ROW_H) + 1 + 2 * OVERSCAN);
  const slots = Array.from<VirtualItem | undefined>({ length: slotCount });
  for (const vi of items) slots[vi.index % slotCount] = vi;
  const first = items[0]?.index ?? 0;
  const last = items[items.length - 1]?.index ?? 0;
  useEffect(() => {
    for (let p = Math.floor(first / PAGE_SIZE); p <= Math.floor(last / PAGE_SIZE); p++) void ensurePage(p);
  }, [first, last, ensurePage]);

  return (
    <div className="sample-table card" data-testid="sample-table">
      <div className="st-row st-head" style={{ gridTemplateColumns: TEMPLATE }} role="row">
        {COLUMNS.map((c) => {
          const k = sort.findIndex((s) => s.field === c.field);
          const key = k >= 0 ? sort[k] : undefined;
          return (
            <button
              key={c.field}
              type="button"
              role="columnheader"
              className={c.num ? 'st-cell num' : 'st-cell'}
              disabled={c.field === 'question'}
              title={c.field === 'question' ? undefined : 'Click to sort; shift-click to add a sort key'}
              onClick={(e) => c.field !== 'question' && toggleSort(c.field, e.shiftKey)}
              data-testid={`sort-${c.field}`}
            >
              {c.label}
              {key ? <span className="sort-mark">{key.dir === 'asc' ? '▲' : '▼'}{sort.length > 1 ? k + 1 : ''}</span> : null}
            </button>
          );
        })}
      </div>
      <div ref={parent} className="st-body" role="rowgroup">
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
          {slots.map((vi, slot) =>
            vi ? <SampleRowView key={slot} index={vi.index} start={vi.start} row={pages[Math.floor(vi.index / PAGE_SIZE)]?.[vi.index % PAGE_SIZE]} onOpen={navigate} /> : <SampleRowView key={slot} index={-1} start={0} row={undefined} onOpen={navigate} />,
          )}
        </div>
      </div>
    </div>
  );
}

/**
 * One row of the table, re-rendered only when its sample or its place changes: a row that stays on screen while
 * the table scrolls costs nothing. A slot with no row this frame (index -1) keeps its element, hidden, for the next.
 */
const SampleRowView = memo(function SampleRowView({ index, start, row, onOpen }: { index: number; start: number; row: SampleRow | undefined; onOpen: (page: 'runs', runId: string, qid: string) => void }) {
  if (index < 0) return <div className="st-row" style={{ display: 'none' }} aria-hidden />;
  return (
    <div
      role="row"
      aria-rowindex={index + 2}
      className={`st-row ${row ? (row.correct ? 'ok' : 'bad') : 'loading'}${row?.disagree ? ' disagree' : ''}`}
      style={{ gridTemplateColumns: TEMPLATE, transform: `translateY(${start}px)`, height: ROW_H }}
      onClick={() => row && onOpen('runs', row.run, row.qid)}
      data-testid="sample-row"
    >
      {row ? (
        <>
          <span className="st-cell ellipsis" title={row.run}>{row.run}</span>
          <span className="st-cell">{row.bench}</span>
          <span className="st-cell ellipsis">{row.category ?? ''}</span>
          <span className="st-cell ellipsis" title={row.question}>{row.question}</span>
          <span className="st-cell">{row.correct ? <span className="pill ok">✓</span> : <span className="pill bad">✗</span>}</span>
          <ScoreCell row={row} />
          <span className="st-cell num">{row.calls}</span>
          <span className="st-cell">{row.stop}</span>
          <span className="st-cell num">{row.tool_errors || ''}</span>
          <span className="st-cell num">{row.latency !== undefined ? `${(row.latency / 1000).toFixed(1)} s` : ''}</span>
          <span className="st-cell ellipsis">{row.labels.join(', ')}</span>
        </>
      ) : (
        <span className="st-cell muted">…</span>
      )}
    </div>
  );
});

/**
 * The score; for a re-scored sample (`loupe rescore`) both scores, the original first, and a mark where
 * the two scorers disagree on correctness (`disagree = true` in the query bar lists those rows).
 */
function ScoreCell({ row }: { row: SampleRow }) {
  if (!row.scores) return <span className="st-cell num">{row.score.toFixed(2)}</span>;
  const entries = Object.entries(row.scores);
  const title = entries.map(([k, v]) => `${k}: ${v.toFixed(2)}`).join('\n') + (row.disagree ? '\nthe scorers disagree on this sample' : '');
  return (
    <span className="st-cell num" title={title} data-testid="score-pair">
      {row.disagree ? <span className="disagree-mark" data-testid="disagree-mark">≠</span> : null}
      {entries.map(([, v]) => v.toFixed(2)).join(' / ')}
    </span>
  );
}
