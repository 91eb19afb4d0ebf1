/**
 * Keyboard map for labelling (Langfuse-style: ←/→ between items, 1–9 pick labels, Mod+Enter completes,
 * `?` opens help; Label Studio-style: the whole map is configurable). Plain data + pure functions so the
 * renderer and tests share them; the renderer only feeds it KeyboardEvent-like objects.
 *
 * Chord syntax: optional modifiers joined by `+`, then one key: `Mod+Enter`, `Shift+j`, `ArrowRight`, `?`.
 * `Mod` is Cmd on macOS and Ctrl elsewhere. Letters are case-insensitive (`Shift+j` is how to write `J`).
 * Non-letter characters are written as typed (`?`, not `Shift+/`), because the browser's `event.key`
 * already includes the Shift of the user's keyboard layout.
 */
/** The part of a taxonomy the key map reads (structural, so the renderer needs no Node code). */
export interface KeyMapTaxonomy {
  labels: ReadonlyArray<{ id: string; key?: string | undefined; archived?: boolean | undefined }>;
}

export type Platform = 'mac' | 'other';

/** action name → chords. Label actions are `label:<id>`. */
export type KeyMap = Record<string, string[]>;

/** Navigation and editing actions, with the keys they default to. */
export const DEFAULT_ACTION_KEYS: Readonly<KeyMap> = Object.freeze({
  next: ['ArrowRight', 'j'],
  prev: ['ArrowLeft', 'k'],
  nextStep: ['ArrowDown'],
  prevStep: ['ArrowUp'],
  submit: ['Mod+Enter'],
  help: ['?'],
  note: ['n'],
  undo: ['Mod+z'],
  clear: ['Backspace'],
  search: ['/'],
  sampleLevel: ['s'],
  close: ['Escape'],
});

/** What each non-label action does, for the `?` help sheet. */
export const ACTION_DESCRIPTIONS: Readonly<Record<string, string>> = Object.freeze({
  next: 'Next sample',
  prev: 'Previous sample',
  nextStep: 'Next step (label a single step)',
  prevStep: 'Previous step',
  submit: 'Mark the sample done and go to the next one',
  help: 'Show or hide this help',
  note: 'Write a note for the selected label',
  undo: 'Undo the last label change',
  clear: 'Remove all labels from the current sample or step',
  search: 'Search the taxonomy (also: add a new label)',
  sampleLevel: 'Switch between labelling the sample and the current step',
  close: 'Close the help or the note box',
});

const MODIFIERS = ['Mod', 'Ctrl', 'Alt', 'Shift', 'Meta'] as const;
type Modifier = (typeof MODIFIERS)[number];

const NAMED_KEYS: Record<string, string> = {
  arrowleft: 'ArrowLeft', left: 'ArrowLeft',
  arrowright: 'ArrowRight', right: 'ArrowRight',
  arrowup: 'ArrowUp', up: 'ArrowUp',
  arrowdown: 'ArrowDown', down: 'ArrowDown',
  enter: 'Enter', return: 'Enter',
  escape: 'Escape', esc: 'Escape',
  space: 'Space', ' ': 'Space', spacebar: 'Space',
  tab: 'Tab', backspace: 'Backspace', delete: 'Delete', del: 'Delete',
  home: 'Home', end: 'End', pageup: 'PageUp', pagedown: 'PageDown', insert: 'Insert',
};
for (let i = 1; i <= 12; i++) NAMED_KEYS[`f${i}`] = `F${i}`;

/** Error thrown for a chord that cannot be parsed; the message says how to write it. */
export class KeyChordError extends Error {
  constructor(readonly chord: string, message: string) {
    super(`key '${chord}': ${message}`);
    this.name = 'KeyChordError';
  }
}

function canonicalKey(raw: string, chord: string): string {
  const named = NAMED_KEYS[raw.toLowerCase()];
  if (named) return named;
  if ([...raw].length === 1) return /^[a-z]$/i.test(raw) ? raw.toLowerCase() : raw;
  throw new KeyChordError(chord, `unknown key '${raw}'; use a single character or one of ${[...new Set(Object.values(NAMED_KEYS))].join(', ')}`);
}

/**
 * Canonical form of a chord: modifiers in the order Mod, Ctrl, Alt, Shift, Meta, then the key.
 * With a platform, `Mod` becomes `Meta` (mac) or `Ctrl` (other) so chords can be compared.
 */
export function normalizeChord(chord: string, platform?: Platform): string {
  const s = chord.trim();
  if (!s) throw new KeyChordError(chord, 'empty key');
  let parts: string[];
  if (s === '+') parts = ['+'];
  else if (s.endsWith('++')) parts = [...s.slice(0, -2).split('+'), '+'];
  else parts = s.split('+');
  const keyRaw = parts.pop();
  if (keyRaw === undefined || keyRaw === '') throw new KeyChordError(chord, 'no key after the modifiers');
  const mods = new Set<Modifier>();
  for (const p of parts) {
    const m = MODIFIERS.find((x) => x.toLowerCase() === p.trim().toLowerCase() || (x === 'Meta' && /^(cmd|command)$/i.test(p.trim())) || (x === 'Ctrl' && /^control$/i.test(p.trim())) || (x === 'Alt' && /^option$/i.test(p.trim())));
    if (!m) throw new KeyChordError(chord, `unknown modifier '${p}'; use Mod, Ctrl, Alt, Shift or Meta`);
    if (mods.has(m)) throw new KeyChordError(chord, `modifier '${m}' repeated`);
    mods.add(m);
  }
  const key = canonicalKey(keyRaw.trim() === '' ? keyRaw : keyRaw.trim(), chord);
  if (mods.has('Shift') && [...key].length === 1 && !/^[a-z]$/.test(key)) {
    throw new KeyChordError(chord, `write the character Shift produces (e.g. '?' rather than 'Shift+/'); Shift is only combined with letters and named keys`);
  }
  if (platform && mods.has('Mod')) {
    mods.delete('Mod');
    const real: Modifier = platform === 'mac' ? 'Meta' : 'Ctrl';
    if (mods.has(real)) throw new KeyChordError(chord, `'Mod' is '${real}' on this platform, so it is repeated`);
    mods.add(real);
  }
  const ordered = MODIFIERS.filter((m) => mods.has(m));
  return [...ordered, key].join('+');
}

/** Minimal KeyboardEvent shape. */
export interface KeyEventLike {
  key: string;
  ctrlKey?: boolean;
  altKey?: boolean;
  shiftKey?: boolean;
  metaKey?: boolean;
}

/** The canonical chord (platform-resolved) of a keyboard event; undefined for bare modifier presses. */
export function chordFromEvent(ev: KeyEventLike, platform: Platform): string | undefined {
  if (['Control', 'Shift', 'Alt', 'Meta', 'OS', 'Dead', 'Unidentified'].includes(ev.key)) return undefined;
  let key: string;
  const named = NAMED_KEYS[ev.key.toLowerCase()];
  if (named) key = named;
  else if ([...ev.key].length === 1) key = /^[a-z]$/i.test(ev.key) ? ev.key.toLowerCase() : ev.key;
  else return undefined;
  const shiftCounts = !([...key].length === 1 && !/^[a-z]$/.test(key));
  const mods: string[] = [];
  if (ev.ctrlKey) mods.push('Ctrl');
  if (ev.altKey) mods.push('Alt');
  if (ev.shiftKey && shiftCounts) mods.push('Shift');
  if (ev.metaKey) mods.push('Meta');
  void platform;
  return [...mods, key].join('+');
}

/** The default map for a taxonomy: navigation keys plus `label:<id>` → the label's key. */
export function buildKeyMap(taxonomy: KeyMapTaxonomy, overrides: Partial<KeyMap> = {}): KeyMap {
  const map: KeyMap = {};
  for (const [a, keys] of Object.entries(DEFAULT_ACTION_KEYS)) map[a] = [...keys];
  for (const l of taxonomy.labels) {
    if (l.archived) continue;
    map[`label:${l.id}`] = l.key ? [l.key] : [];
  }
  for (const [a, keys] of Object.entries(overrides)) if (keys) map[a] = [...keys];
  return map;
}

export interface KeyConflict {
  /** Platform-resolved chord. */
  chord: string;
  /** Every action bound to it (2 or more). */
  actions: string[];
}
export interface KeyMapIssue {
  action: string;
  key?: string;
  message: string;
}
export interface KeyMapReport {
  ok: boolean;
  conflicts: KeyConflict[];
  invalid: KeyMapIssue[];
  /** Actions the map binds that the app does not know (typos, labels not in the taxonomy). */
  unknownActions: string[];
}

/**
 * Check a key map: unparseable chords, one chord bound to several actions (after resolving `Mod` for the
 * platform), and unknown actions when a taxonomy is given.
 */
export function validateKeyMap(map: KeyMap, opts: { platform?: Platform; taxonomy?: KeyMapTaxonomy } = {}): KeyMapReport {
  const platform = opts.platform ?? 'other';
  const byChord = new Map<string, string[]>();
  const invalid: KeyMapIssue[] = [];
  for (const [action, keys] of Object.entries(map)) {
    if (!Array.isArray(keys)) {
      invalid.push({ action, message: 'keys must be a list of strings' });
      continue;
    }
    const seen = new Set<string>();
    for (const key of keys) {
      if (typeof key !== 'string') {
        invalid.push({ action, message: `key ${JSON.stringify(key)} is not a string` });
        continue;
      }
      let chord: string;
      try {
        chord = normalizeChord(key, platform);
      } catch (err) {
        invalid.push({ action, key, message: (err as Error).message });
        continue;
      }
      if (seen.has(chord)) continue;
      seen.add(chord);
      const list = byChord.get(chord) ?? [];
      list.push(action);
      byChord.set(chord, list);
    }
  }
  const conflicts = [...byChord.entries()].filter(([, a]) => a.length > 1).map(([chord, actions]) => ({ chord, actions }));
  const unknownActions: string[] = [];
  if (opts.taxonomy) {
    const known = new Set([...Object.keys(DEFAULT_ACTION_KEYS), ...opts.taxonomy.labels.map((l) => `label:${l.id}`)]);
    for (const a of Object.keys(map)) if (!known.has(a)) unknownActions.push(a);
  }
  return { ok: conflicts.length === 0 && invalid.length === 0 && unknownActions.length === 0, conflicts, invalid, unknownActions };
}

/** A chord → action lookup for one platform. Throws when the map has conflicts or invalid keys. */
export function compileKeyMap(map: KeyMap, platform: Platform): (ev: KeyEventLike) => string | undefined {
  const report = validateKeyMap(map, { platform });
  if (report.conflicts.length || report.invalid.length) {
    const lines = [
      ...report.conflicts.map((c) => `'${c.chord}' is bound to ${c.actions.join(', ')}`),
      ...report.invalid.map((i) => i.message),
    ];
    throw new Error(`key map has problems:\n  - ${lines.join('\n  - ')}`);
  }
  const lookup = new Map<string, string>();
  for (const [action, keys] of Object.entries(map)) for (const k of keys) lookup.set(normalizeChord(k, platform), action);
  return (ev) => {
    const chord = chordFromEvent(ev, platform);
    return chord === undefined ? undefined : lookup.get(chord);
  };
}

/**
 * True when a key press should go to a text field, not to the shortcuts (FiftyOne PR #2083: hotkeys must
 * not fire while typing). Modifier chords like Mod+Enter still count as shortcuts there.
 */
export function isTypingTarget(target: { tagName?: string; isContentEditable?: boolean; type?: string } | null | undefined): boolean {
  if (!target) return false;
  if (target.isContentEditable) return true;
  const tag = (target.tagName ?? '').toUpperCase();
  if (tag === 'TEXTAREA' || tag === 'SELECT') return true;
  if (tag === 'INPUT') {
    const t = (target.type ?? 'text').toLowerCase();
    return !['checkbox', 'radio', 'button', 'submit', 'reset', 'range', 'color', 'file'].includes(t);
  }
  return false;
}

/** Human text for a chord in the help sheet: `Mod+Enter` → `⌘ Enter` on mac, `Ctrl+Enter` elsewhere. */
export function describeChord(chord: string, platform: Platform): string {
  const c = normalizeChord(chord, platform);
  if (platform !== 'mac') return c;
  const sym: Record<string, string> = { Meta: '⌘', Ctrl: '⌃', Alt: '⌥', Shift: '⇧' };
  const parts = c.split('+');
  return parts.map((p, i) => (i < parts.length - 1 ? (sym[p] ?? p) : p)).join(' ');
}
