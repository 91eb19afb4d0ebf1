import { memo } from 'react';
import type { Box, MediaRef } from '../../../../app/contract';
import type { PairSide } from '../../stores/useDemoPairStore';

/** A box one side's model chose on the shared image. */
export interface PairBox {
  side: PairSide;
  step: number;
  /** The step row it belongs to (the active row's boxes are drawn thicker). */
  row: number;
  box: Box;
  /** Proposed and paused in step mode: not run yet. */
  proposed?: boolean;
}

const pct = (v: number) => `${(Math.max(0, Math.min(1, v)) * 100).toFixed(3)}%`;

/** The question image both sides saw, with both sides' boxes: A amber, B violet, each numbered by its step. Memoized: streamed text does not redraw it. */
export const PairImageViewer = memo(function PairImageViewer({ media, url, boxes, activeRow }: { media: MediaRef | undefined; url(id: string): string; boxes: PairBox[]; activeRow: number }) {
  if (!media) return <div className="pair-viewer muted">No image yet.</div>;
  return (
    <div className="pair-viewer" data-testid="pair-viewer">
      <div className="pair-legend" data-testid="pair-legend">
        <span><span className="pair-tag pair-tag-a">A</span> boxes of A</span>
        <span><span className="pair-tag pair-tag-b">B</span> boxes of B</span>
        <span className="muted small">{media.width}×{media.height}</span>
      </div>
      <div className="pair-stage" style={{ aspectRatio: `${media.width} / ${media.height}`, width: `min(100%, calc(42vh * ${(media.width / media.height).toFixed(4)}))` }}>
        <img src={url(media.id)} alt="the question image" />
        {boxes.map((b) => (
          <div
            key={`${b.side}-${b.row}-${b.proposed ? 'p' : 'r'}`}
            className={`pair-box pair-box-${b.side.toLowerCase()}${b.row === activeRow ? ' active' : ''}${b.proposed ? ' proposed' : ''}`}
            style={{ left: pct(b.box[0]), top: pct(b.box[1]), width: pct(b.box[2] - b.box[0]), height: pct(b.box[3] - b.box[1]) }}
            data-testid={`pair-box-${b.side}-${b.step}`}
          >
            <span className="pair-box-label">{b.side}{b.step}</span>
          </div>
        ))}
      </div>
    </div>
  );
});
