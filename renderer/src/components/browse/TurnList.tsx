import type { Trajectory } from '../../../../app/contract';
import { getClient } from '../../client';

/**
 * Turn-by-turn text of a trajectory with each call's arguments, produced images and exact error text.
 * `raw` shows the exact response and observation strings as the model saw them.
 */
export function TurnList({ trajectory, raw }: { trajectory: Trajectory; raw: boolean }) {
  const client = getClient();
  return (
    <ol className="turns" data-testid="turn-list">
      {trajectory.turns.map((t) => (
        <li key={t.index} className="turn">
          <div className="turn-head">
            <b>Turn {t.index + 1}</b>
            {t.call ? <span className="badge">{t.call.name ?? 'unparsed call'}</span> : <span className="badge badge-ok">answer</span>}
            {t.call?.error ? <span className="badge badge-bad" title={t.call.error}>tool error</span> : null}
            <span className="muted small">{t.completionTokens !== undefined ? `${t.completionTokens} tok` : ''}{t.latencyMs !== undefined ? ` · ${(t.latencyMs / 1000).toFixed(2)} s` : ''}</span>
          </div>
          <pre className={raw ? 'turn-text raw' : 'turn-text'}>{t.text}</pre>
          {t.call && !raw ? (
            <div className="call">
              <code>{JSON.stringify(t.call.arguments ?? t.call.raw)}</code>
              {t.call.cropBox ? <span className="muted small"> · crop box [{t.call.cropBox.join(', ')}] on image {(t.call.targetIndex ?? 0) + 1}</span> : null}
              {t.call.error ? <div className="error-text" data-testid="tool-error">{t.call.error}</div> : null}
              <div className="thumbs">
                {t.call.produced.map((m) => (
                  <figure key={m.id}>
                    <img src={client.mediaUrl(m.id)} alt={`produced ${m.width}×${m.height}`} loading="lazy" />
                    <figcaption>{m.width}×{m.height}</figcaption>
                  </figure>
                ))}
              </div>
            </div>
          ) : null}
          {raw && t.observation ? <pre className="turn-text raw obs">{t.observation}</pre> : null}
        </li>
      ))}
    </ol>
  );
}
