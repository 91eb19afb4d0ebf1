import { useLayoutEffect, useRef, useState } from 'react';
import { chordFromEvent } from '../../../../app/contract/keymap';
import { useAppStore } from '../../stores/useAppStore';
import { myLabels, useLabelsStore } from '../../stores/useLabelsStore';

/**
 * The note for the focused label of the current unit. Enter saves, Shift+Enter breaks the line, the
 * submit chord saves and moves to the next unlabelled sample, Escape cancels.
 */
export function NoteBox() {
  const open = useLabelsStore((s) => s.noteOpen);
  const focusLabel = useLabelsStore((s) => s.focusLabel);
  const labels = useLabelsStore((s) => s.labels);
  const step = useLabelsStore((s) => s.step);
  const config = useLabelsStore((s) => s.config);
  const setNote = useLabelsStore((s) => s.setNote);
  const setNoteOpen = useLabelsStore((s) => s.setNoteOpen);
  const submit = useLabelsStore((s) => s.submit);
  const who = useAppStore((s) => s.settings?.annotator ?? '');
  const current = myLabels(labels, who, step).find((l) => l.label === focusLabel);
  const [text, setText] = useState('');
  const ref = useRef<HTMLTextAreaElement>(null);
  // Focus in the same commit that shows the box: the keydown that opened it was prevented, and the
  // next key the annotator types must already go to the box.
  useLayoutEffect(() => {
    if (open) {
      setText(current?.note ?? '');
      ref.current?.focus();
    }
  }, [open, focusLabel]);
  if (!open || !focusLabel || !config) return null;
  const name = config.taxonomy.find((l) => l.id === focusLabel)?.name ?? focusLabel;
  const submitChords = new Set(config.keymap.submit ?? []);
  return (
    <div className="an-notebox">
      <label className="small" htmlFor="an-note-input">Note on <b>{name}</b>{step === null ? '' : ` (step ${step + 1})`}</label>
      <textarea
        id="an-note-input"
        ref={ref}
        className="input"
        rows={3}
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          const chord = chordFromEvent(e.nativeEvent, config.platform);
          if (chord && submitChords.has(chord)) {
            e.preventDefault();
            void setNote(focusLabel, text).then(() => submit());
          } else if (e.key === 'Enter' && !e.shiftKey) {
            e.preventDefault();
            void setNote(focusLabel, text);
          } else if (e.key === 'Escape') {
            e.preventDefault();
            setNoteOpen(false);
          }
        }}
        data-testid="note-input"
      />
      <div className="an-notebox-actions">
        <button type="button" className="btn btn-sm btn-primary" onClick={() => void setNote(focusLabel, text)}>Save note</button>
        <button type="button" className="btn btn-sm" onClick={() => setNoteOpen(false)}>Cancel</button>
      </div>
    </div>
  );
}
