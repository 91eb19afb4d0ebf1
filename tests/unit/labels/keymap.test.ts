import { describe, expect, it } from 'vitest';
import { buildKeyMap, chordFromEvent, compileKeyMap, DEFAULT_TAXONOMY, describeChord, isTypingTarget, normalizeChord, validateKeyMap } from '../../../app/labels';

describe('chords', () => {
  it('normalizes modifiers, aliases and letter case', () => {
    expect(normalizeChord('shift+ctrl+J')).toBe('Ctrl+Shift+j');
    expect(normalizeChord('cmd+enter')).toBe('Meta+Enter');
    expect(normalizeChord('Mod+Enter')).toBe('Mod+Enter');
    expect(normalizeChord('Mod+Enter', 'mac')).toBe('Meta+Enter');
    expect(normalizeChord('Mod+Enter', 'other')).toBe('Ctrl+Enter');
    expect(normalizeChord('left')).toBe('ArrowLeft');
    expect(normalizeChord('?')).toBe('?');
    expect(normalizeChord('Ctrl++')).toBe('Ctrl++');
  });

  it('explains bad chords', () => {
    expect(() => normalizeChord('Hyper+a')).toThrow(/unknown modifier 'Hyper'/);
    expect(() => normalizeChord('Shift+/')).toThrow(/write the character Shift produces/);
    expect(() => normalizeChord('Ctrl+')).toThrow(/no key after the modifiers/);
    expect(() => normalizeChord('Ctrl+Ctrl+a')).toThrow(/repeated/);
    expect(() => normalizeChord('PrintScreenX')).toThrow(/unknown key/);
    expect(() => normalizeChord('Mod+Ctrl+a', 'other')).toThrow(/'Mod' is 'Ctrl'/);
  });

  it('reads keyboard events the way the map writes chords', () => {
    expect(chordFromEvent({ key: 'J', shiftKey: true }, 'other')).toBe('Shift+j');
    expect(chordFromEvent({ key: '?', shiftKey: true }, 'other')).toBe('?');
    expect(chordFromEvent({ key: 'Enter', metaKey: true }, 'mac')).toBe('Meta+Enter');
    expect(chordFromEvent({ key: 'Shift', shiftKey: true }, 'other')).toBeUndefined();
  });

  it('describes chords per platform for the help sheet', () => {
    expect(describeChord('Mod+Enter', 'mac')).toBe('⌘ Enter');
    expect(describeChord('Mod+Enter', 'other')).toBe('Ctrl+Enter');
  });
});

describe('key maps', () => {
  it('the default map for the default taxonomy is valid on both platforms', () => {
    const map = buildKeyMap(DEFAULT_TAXONOMY);
    expect(map['label:wrong_region']).toEqual(['1']);
    expect(map.next).toEqual(['ArrowRight', 'j']);
    for (const platform of ['mac', 'other'] as const) {
      const r = validateKeyMap(map, { platform, taxonomy: DEFAULT_TAXONOMY });
      expect(r).toEqual({ ok: true, conflicts: [], invalid: [], unknownActions: [] });
    }
  });

  it('reports conflicts, invalid keys and unknown actions', () => {
    const map = buildKeyMap(DEFAULT_TAXONOMY, { 'label:no_zoom': ['j'], note: ['Shift+/'], 'label:typo': ['x'] });
    const r = validateKeyMap(map, { taxonomy: DEFAULT_TAXONOMY });
    expect(r.ok).toBe(false);
    expect(r.conflicts).toEqual([{ chord: 'j', actions: ['next', 'label:no_zoom'] }]);
    expect(r.invalid).toHaveLength(1);
    expect(r.invalid[0]).toMatchObject({ action: 'note', key: 'Shift+/' });
    expect(r.unknownActions).toEqual(['label:typo']);
  });

  it('finds conflicts that exist on one platform only (Mod is Ctrl off the Mac)', () => {
    const map = { undo: ['Mod+z'], clear: ['Ctrl+z'] };
    expect(validateKeyMap(map, { platform: 'mac' }).conflicts).toEqual([]);
    expect(validateKeyMap(map, { platform: 'other' }).conflicts).toEqual([{ chord: 'Ctrl+z', actions: ['undo', 'clear'] }]);
  });

  it('compiles to a resolver and refuses a conflicting map', () => {
    const resolve = compileKeyMap(buildKeyMap(DEFAULT_TAXONOMY), 'mac');
    expect(resolve({ key: '3' })).toBe('label:no_zoom');
    expect(resolve({ key: 'ArrowRight' })).toBe('next');
    expect(resolve({ key: 'Enter', metaKey: true })).toBe('submit');
    expect(resolve({ key: 'Enter', ctrlKey: true })).toBeUndefined();
    expect(resolve({ key: '?', shiftKey: true })).toBe('help');
    expect(() => compileKeyMap({ a: ['x'], b: ['X'] }, 'other')).toThrow(/'x' is bound to a, b/);
  });

  it('knows when a key press belongs to a text field', () => {
    expect(isTypingTarget({ tagName: 'input', type: 'text' })).toBe(true);
    expect(isTypingTarget({ tagName: 'INPUT', type: 'checkbox' })).toBe(false);
    expect(isTypingTarget({ tagName: 'TEXTAREA' })).toBe(true);
    expect(isTypingTarget({ tagName: 'DIV', isContentEditable: true })).toBe(true);
    expect(isTypingTarget({ tagName: 'BUTTON' })).toBe(false);
    expect(isTypingTarget(null)).toBe(false);
  });
});
