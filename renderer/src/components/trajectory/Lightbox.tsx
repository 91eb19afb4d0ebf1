import { useEffect } from 'react';
import type { MediaRef } from '../../../../app/contract';

/** A crop or frame at full size; Esc or a click closes it. */
export function Lightbox({ media, url, title, onClose }: { media: MediaRef; url: string; title: string; onClose(): void }) {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.stopPropagation();
        onClose();
      }
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, [onClose]);
  return (
    <div className="tv-lightbox" role="dialog" aria-label={title} data-testid="lightbox" onClick={onClose}>
      <figure onClick={(e) => e.stopPropagation()}>
        <img src={url} alt={title} width={media.width} height={media.height} />
        <figcaption>
          {title} · {media.width}×{media.height} <button type="button" className="btn" onClick={onClose}>Close</button>
        </figcaption>
      </figure>
    </div>
  );
}
