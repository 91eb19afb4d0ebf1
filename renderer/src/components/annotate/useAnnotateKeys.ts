import { useEffect, useMemo } from 'react';
import { chordFromEvent, isTypingTarget } from '../../../../app/contract/keymap';
import { useLabelsStore } from '../../stores/useLabelsStore';

/** chord → action from the core's resolved key map (first binding wins; conflicts are listed by the core). */
export function chordLookup(keymap: Record<string, string[]>): Map<string, string> {
  const m = new Map<string, string>();
  for (const [action, chords] of Object.entries(keymap)) for (const c of chords) if (!m.has(c)) m.set(c, action);
  return m;
}

// Actions run one after another in key-press order, so a label pressed right after "next" lands on the
// sample the annotator is looking at, not on the one being left.
let chain: Promise<void> = Promise.resolve();
function enqueue(fn: () => Promise<void> | void): void {
  chain = chain.then(fn).catch((err: unknown) => useLabelsStore.getState().setError(err instanceof Error ? err.message : String(err)));
}

/** Run one key-map action. Exported for the help sheet's clickable rows. */
export function runAction(action: string): void {
  const s = useLabelsStore.getState();
  if (action.startsWith('label:')) {
    const id = action.slice('label:'.length);
    enqueue(() => useLabelsStore.getState().toggleLabel(id));
    return;
  }
  switch (action) {
    case 'next': return enqueue(() => useLabelsStore.getState().next());
    case 'prev': return enqueue(() => useLabelsStore.getState().prev());
    case 'submit': return enqueue(() => useLabelsStore.getState().submit());
    case 'nextStep': return enqueue(() => useLabelsStore.getState().nextStep());
    case 'prevStep': return enqueue(() => useLabelsStore.getState().prevStep());
    case 'sampleLevel': return enqueue(() => useLabelsStore.getState().toggleSampleLevel());
    case 'undo': return enqueue(() => useLabelsStore.getState().undo());
    case 'clear': return enqueue(() => useLabelsStore.getState().clearUnit());
    // Opened at once (not queued) so the keys typed next land in the box, not on the shortcuts.
    case 'note': return s.setNoteOpen(true);
    case 'help': return s.setHelp(!s.helpOpen);
    case 'search': return s.focusSearch();
    case 'close':
      if (s.helpOpen) s.setHelp(false);
      else if (s.noteOpen) s.setNoteOpen(false);
      return;
  }
}

/**
 * The Annotate page's keyboard: the configurable map from `labels:config`. Shortcuts are inert while
 * typing in a field (FiftyOne #2083), except Escape (leave the field) and the submit chord inside the
 * note box (save the note, then submit).
 */
export function useAnnotateKeys(): void {
  const config = useLabelsStore((s) => s.config);
  const lookup = useMemo(() => chordLookup(config?.keymap ?? {}), [config]);
  const platform = config?.platform ?? 'other';
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented || e.isComposing) return;
      const chord = chordFromEvent(e, platform);
      if (!chord) return;
      const action = lookup.get(chord);
      const target = e.target as HTMLElement | null;
      if (isTypingTarget(target)) {
        if (chord === 'Escape' || action === 'close') {
          target?.blur();
          const s = useLabelsStore.getState();
          if (s.noteOpen) s.setNoteOpen(false);
        }
        // The note box handles its own submit chord; everything else types.
        return;
      }
      if (!action) return;
      // The help sheet is modal: only help/close reach through it.
      if (useLabelsStore.getState().helpOpen && action !== 'help' && action !== 'close') return;
      e.preventDefault();
      runAction(action);
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [lookup, platform]);
}
