import { useCallback, useEffect, useRef, useState, type ReactNode, type KeyboardEvent as ReactKeyboardEvent, type PointerEvent as ReactPointerEvent } from 'react';
import type { Box, MediaRef } from '../../../../app/contract';
import { clamp01, nudgeBox, type StepBox } from './geometry';

/** Hit area of a corner handle (px): at least 24 px, for a mouse at a lectern or a finger. */
const HANDLE_HIT = 28;

export interface ImageViewerProps {
  media: MediaRef;
  url: string;
  boxes: StepBox[];
  activeTurn?: number;
  showOverlays: boolean;
  onBoxClick?(turn: number): void;
  /** Step mode: an editable box (normalized), with its step number. */
  edit?: { box: Box; step: number; onChange(box: Box): void };
  label?: string;
  /** Drawn over the image, under the boxes (the attention map). */
  underlay?: ReactNode;
}

type Drag = { kind: 'pan'; x: number; y: number; tx: number; ty: number } | { kind: 'move' | 'nw' | 'ne' | 'sw' | 'se'; x: number; y: number; start: Box; w: number; h: number };

const pct = (v: number) => `${(v * 100).toFixed(4)}%`;

/** One image with its boxes: wheel or buttons zoom around the cursor, drag pans, boxes can be edited. */
export function ImageViewer({ media, url, boxes, activeTurn, showOverlays, onBoxClick, edit, label, underlay }: ImageViewerProps) {
  const [view, setView] = useState({ scale: 1, tx: 0, ty: 0 });
  const drag = useRef<Drag | null>(null);
  const frame = useRef<HTMLDivElement>(null);
  const stage = useRef<HTMLDivElement>(null);
  const editEl = useRef<HTMLDivElement>(null);
  // The stage's size on screen: a box smaller than three handles gets its handles outside, so they never cover it.
  const [stagePx, setStagePx] = useState({ w: 0, h: 0 });
  useEffect(() => {
    const el = stage.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(() => setStagePx({ w: el.offsetWidth, h: el.offsetHeight }));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  // A new box to edit takes the keyboard focus, so arrows nudge it at once (a presenter's hands stay on the keys).
  const editStep = edit?.step;
  useEffect(() => {
    if (editStep !== undefined) editEl.current?.focus({ preventScroll: true });
  }, [editStep]);

  useEffect(() => setView({ scale: 1, tx: 0, ty: 0 }), [media.id]);

  const zoomAt = useCallback((factor: number, cx?: number, cy?: number) => {
    setView((v) => {
      const scale = Math.max(1, Math.min(12, v.scale * factor));
      const rect = frame.current?.getBoundingClientRect();
      const px = cx ?? (rect ? rect.width / 2 : 0);
      const py = cy ?? (rect ? rect.height / 2 : 0);
      // Keep the point under the cursor fixed.
      const k = scale / v.scale;
      const tx = scale === 1 ? 0 : px - (px - v.tx) * k;
      const ty = scale === 1 ? 0 : py - (py - v.ty) * k;
      return { scale, tx, ty };
    });
  }, []);

  useEffect(() => {
    const el = frame.current;
    if (!el) return;
    const onWheel = (e: WheelEvent) => {
      e.preventDefault();
      const r = el.getBoundingClientRect();
      zoomAt(e.deltaY < 0 ? 1.2 : 1 / 1.2, e.clientX - r.left, e.clientY - r.top);
    };
    el.addEventListener('wheel', onWheel, { passive: false });
    return () => el.removeEventListener('wheel', onWheel);
  }, [zoomAt]);

  const onPointerDown = (e: ReactPointerEvent, kind: Drag['kind']) => {
    e.stopPropagation();
    e.preventDefault();
    (e.currentTarget as Element).setPointerCapture?.(e.pointerId);
    if (kind === 'pan') drag.current = { kind, x: e.clientX, y: e.clientY, tx: view.tx, ty: view.ty };
    else if (edit) {
      const r = stage.current!.getBoundingClientRect();
      drag.current = { kind, x: e.clientX, y: e.clientY, start: edit.box, w: r.width, h: r.height };
    }
  };
  const onPointerMove = (e: ReactPointerEvent) => {
    const d = drag.current;
    if (!d) return;
    if (d.kind === 'pan') {
      if (view.scale === 1) return;
      setView((v) => ({ ...v, tx: d.tx + e.clientX - d.x, ty: d.ty + e.clientY - d.y }));
      return;
    }
    if (!edit) return;
    const dx = (e.clientX - d.x) / d.w;
    const dy = (e.clientY - d.y) / d.h;
    const [x1, y1, x2, y2] = d.start;
    let b: Box;
    if (d.kind === 'move') {
      const mx = Math.max(-x1, Math.min(1 - x2, dx));
      const my = Math.max(-y1, Math.min(1 - y2, dy));
      b = [x1 + mx, y1 + my, x2 + mx, y2 + my];
    } else {
      const nx1 = d.kind === 'nw' || d.kind === 'sw' ? clamp01(x1 + dx) : x1;
      const nx2 = d.kind === 'ne' || d.kind === 'se' ? clamp01(x2 + dx) : x2;
      const ny1 = d.kind === 'nw' || d.kind === 'ne' ? clamp01(y1 + dy) : y1;
      const ny2 = d.kind === 'sw' || d.kind === 'se' ? clamp01(y2 + dy) : y2;
      b = [Math.min(nx1, nx2), Math.min(ny1, ny2), Math.max(nx1, nx2), Math.max(ny1, ny2)];
    }
    edit.onChange(b);
  };
  const onPointerUp = () => {
    drag.current = null;
  };
  const onEditKey = (e: ReactKeyboardEvent) => {
    if (!edit) return;
    const next = nudgeBox(edit.box, e.key, { shift: e.shiftKey, alt: e.altKey });
    if (!next) return;
    e.preventDefault();
    e.stopPropagation();
    edit.onChange(next);
  };
  const editPx = edit ? { w: (edit.box[2] - edit.box[0]) * stagePx.w * view.scale, h: (edit.box[3] - edit.box[1]) * stagePx.h * view.scale } : null;
  const smallEdit = editPx !== null && Math.min(editPx.w, editPx.h) < 3 * HANDLE_HIT;

  const aspect = media.width / Math.max(1, media.height);
  return (
    <div className="tv-viewer" data-testid="image-viewer">
      <div className="tv-viewer-bar">
        <span className="muted">{label ?? ''} {media.width}×{media.height}</span>
        <span className="grow" />
        <button type="button" className="btn btn-sm" onClick={() => zoomAt(1.4)} title="Zoom in (or scroll)" data-testid="zoom-in">+</button>
        <button type="button" className="btn btn-sm" onClick={() => zoomAt(1 / 1.4)} title="Zoom out">−</button>
        <button type="button" className="btn btn-sm" onClick={() => setView({ scale: 1, tx: 0, ty: 0 })} title="Fit">Fit</button>
        <span className="muted tv-zoom" data-testid="zoom-level">{Math.round(view.scale * 100)}%</span>
      </div>
      <div className="tv-frame" ref={frame} onPointerDown={(e) => onPointerDown(e, 'pan')} onPointerMove={onPointerMove} onPointerUp={onPointerUp} onPointerCancel={onPointerUp}>
        <div className="tv-transform" style={{ transform: `translate(${view.tx}px, ${view.ty}px) scale(${view.scale})` }}>
          <div className="tv-stage" ref={stage} style={{ aspectRatio: `${aspect}`, width: `min(100%, calc(var(--tv-frame-h) * ${aspect.toFixed(4)}))` }}>
            <img src={url} alt={label ?? 'image'} draggable={false} />
            {underlay ?? null}
            {showOverlays
              ? boxes.map((b) => (
                  <div key={b.turn}>
                    {b.padded ? <div className="tv-box-pad" style={{ left: pct(b.padded[0]), top: pct(b.padded[1]), width: pct(b.padded[2] - b.padded[0]), height: pct(b.padded[3] - b.padded[1]) }} /> : null}
                    <button
                      type="button"
                      className={`tv-box${b.turn === activeTurn ? ' active' : ''}${b.edited ? ' edited' : ''}`}
                      data-testid={`box-step-${b.step}`}
                      title={`Step ${b.step}: box ${b.box.map((v) => v.toFixed(3)).join(', ')}`}
                      style={{ left: pct(b.box[0]), top: pct(b.box[1]), width: pct(b.box[2] - b.box[0]), height: pct(b.box[3] - b.box[1]) }}
                      onPointerDown={(e) => e.stopPropagation()}
                      onClick={() => onBoxClick?.(b.turn)}
                    >
                      <span className="tv-box-label">{b.step}</span>
                    </button>
                  </div>
                ))
              : null}
            {edit ? (
              <div
                ref={editEl}
                className={`tv-edit${smallEdit ? ' small' : ''}`}
                data-testid="edit-box"
                tabIndex={0}
                role="group"
                aria-label={`Crop box of step ${edit.step}: drag it or its corners; arrow keys move it, Shift+arrows resize it, Alt for fine steps`}
                style={{ left: pct(edit.box[0]), top: pct(edit.box[1]), width: pct(edit.box[2] - edit.box[0]), height: pct(edit.box[3] - edit.box[1]), ['--tv-handle-scale' as string]: String(1 / view.scale) }}
                onPointerDown={(e) => onPointerDown(e, 'move')}
                onKeyDown={onEditKey}
              >
                <span className="tv-box-label">{edit.step}</span>
                {(['nw', 'ne', 'sw', 'se'] as const).map((h) => (
                  <span key={h} className={`tv-handle tv-${h}`} data-testid={`edit-handle-${h}`} onPointerDown={(e) => onPointerDown(e, h)} />
                ))}
              </div>
            ) : null}
          </div>
        </div>
      </div>
      {edit ? (
        <div className="tv-edit-hint muted" data-testid="edit-hint">
          Drag the box or its corners · <kbd>←</kbd><kbd>↑</kbd><kbd>→</kbd><kbd>↓</kbd> move · <kbd>Shift</kbd>+arrows resize · <kbd>Alt</kbd> finer
        </div>
      ) : null}
    </div>
  );
}
