import { useEffect, useRef, useState } from 'react';

/**
 * A full-screen slide deck's common part (the Demo's presentation mode and the side-by-side lockstep one): the
 * root element takes focus and asks for full screen, → / Space / PageDown and ← / PageUp move, Home / End jump,
 * Escape closes. Keys are taken in the capture phase so the page under the deck does not also act on them.
 */
export function useSlideDeck(count: number, onClose: () => void) {
  const [index, setIndex] = useState(0);
  const root = useRef<HTMLDivElement>(null);

  useEffect(() => {
    root.current?.focus();
    // Full screen when the browser allows it; the overlay already covers the window otherwise.
    root.current?.requestFullscreen?.().catch(() => undefined);
    return () => {
      if (document.fullscreenElement) void document.exitFullscreen().catch(() => undefined);
    };
  }, []);

  useEffect(() => {
    const last = Math.max(0, count - 1);
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'ArrowRight' || e.key === ' ' || e.key === 'PageDown') setIndex((x) => Math.min(last, x + 1));
      else if (e.key === 'ArrowLeft' || e.key === 'PageUp') setIndex((x) => Math.max(0, x - 1));
      else if (e.key === 'Home') setIndex(0);
      else if (e.key === 'End') setIndex(last);
      else if (e.key === 'Escape') onClose();
      else return;
      e.preventDefault();
      e.stopPropagation();
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  }, [count, onClose]);

  return { index, setIndex, root };
}
