import { describeChord } from '../../../../app/contract/keymap';
import { useLabelsStore } from '../../stores/useLabelsStore';

/** The `?` sheet: every action and every label with its chords. */
export function HelpSheet() {
  const open = useLabelsStore((s) => s.helpOpen);
  const config = useLabelsStore((s) => s.config);
  const setHelp = useLabelsStore((s) => s.setHelp);
  if (!open || !config) return null;
  const chords = (action: string) => (config.keymap[action] ?? []).map((c) => describeChord(c, config.platform));
  const labels = config.taxonomy.filter((l) => !l.archived);
  return (
    <div className="an-help-backdrop" onClick={() => setHelp(false)}>
      <div className="an-help card" role="dialog" aria-label="Keyboard shortcuts" data-testid="help-sheet" onClick={(e) => e.stopPropagation()}>
        <header className="an-help-head">
          <h2>Keyboard shortcuts</h2>
          <button type="button" className="btn btn-sm" onClick={() => setHelp(false)}>Close</button>
        </header>
        <div className="an-help-cols">
          <section>
            <h3>Actions</h3>
            <table className="table compact">
              <tbody>
                {Object.entries(config.actions).map(([action, text]) => (
                  <tr key={action} data-testid={`help-action-${action}`}>
                    <td><span className="an-keys">{chords(action).map((c) => <kbd key={c}>{c}</kbd>)}{chords(action).length ? null : <span className="muted">unbound</span>}</span></td>
                    <td>{text}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
          <section>
            <h3>Labels (toggle on the sample or the selected step)</h3>
            <table className="table compact">
              <tbody>
                {labels.map((l) => (
                  <tr key={l.id} data-testid={`help-label-${l.id}`}>
                    <td><span className="an-keys">{chords(`label:${l.id}`).map((c) => <kbd key={c}>{c}</kbd>)}{chords(`label:${l.id}`).length ? null : <span className="muted">no key</span>}</span></td>
                    <td><b>{l.name}</b> <span className="muted small">{l.description}</span></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        </div>
        {config.problems.length ? <div className="banner banner-error">Key map problems: {config.problems.join('; ')}</div> : null}
        <p className="muted small">Shortcuts do nothing while you type in a field; Escape leaves the field.</p>
      </div>
    </div>
  );
}
