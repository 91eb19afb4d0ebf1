import { useEffect } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useAppStore } from '../stores/useAppStore';
import { useServedStore } from '../stores/useServedStore';

/** Core version, engine state and workspace: all from the core through the contract. */
export function StatusBar() {
  const info = useAppStore((s) => s.info);
  const engine = useAppStore((s) => s.engine);
  const connected = useAppStore((s) => s.connected);
  const served = useServedStore(useShallow((s) => s.engines));
  const initServed = useServedStore((s) => s.init);
  useEffect(() => {
    if (connected) void initServed();
  }, [connected, initServed]);
  // Served engines still of interest: running or starting, and the last word of one that ended.
  const servedText = served.map((e) => `${e.model} (${e.where === 'slurm' ? 'Slurm' : e.where === 'in-app' ? 'in the app' : 'local'}) ${e.status}`).join(', ');
  const engineText = engine ? `${engine.status}${engine.model ? ` · ${engine.model}` : ''}${engine.device ? ` · ${engine.device}` : ''}` : '…';
  return (
    <footer className="statusbar" data-testid="statusbar">
      <span className={connected ? 'dot dot-ok' : 'dot dot-bad'} title={connected ? 'connected to the core' : 'not connected'} />
      <span data-testid="status-version">Loupe {info ? `v${info.version}` : '…'}</span>
      <span className="sep">|</span>
      <span className="status-engine" data-testid="status-engine" title={engineText}>engine: {engineText}</span>
      {served.length ? (
        <>
          <span className="sep">|</span>
          <span className="status-served" data-testid="status-served" title={served.map((e) => `${e.id}: ${e.status}${e.message ? ` — ${e.message}` : ''}`).join('\n')}>served: {servedText}</span>
        </>
      ) : null}
      <span className="sep">|</span>
      <span className="status-workspace" data-testid="status-workspace" title={info?.workspace}>workspace: {info?.workspace ?? '…'}</span>
      <span className="grow" />
      <span className="status-door">{info ? `${info.transport === 'electron' ? 'desktop' : 'browser mode'} · ${info.platform}` : ''}</span>
    </footer>
  );
}
