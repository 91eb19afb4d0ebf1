import { useAppStore } from '../stores/useAppStore';

/** Core version, engine state and workspace: all from the core through the contract. */
export function StatusBar() {
  const info = useAppStore((s) => s.info);
  const engine = useAppStore((s) => s.engine);
  const connected = useAppStore((s) => s.connected);
  const engineText = engine ? `${engine.status}${engine.model ? ` · ${engine.model}` : ''}${engine.device ? ` · ${engine.device}` : ''}` : '…';
  return (
    <footer className="statusbar" data-testid="statusbar">
      <span className={connected ? 'dot dot-ok' : 'dot dot-bad'} title={connected ? 'connected to the core' : 'not connected'} />
      <span data-testid="status-version">Loupe {info ? `v${info.version}` : '…'}</span>
      <span className="sep">|</span>
      <span className="status-engine" data-testid="status-engine" title={engineText}>engine: {engineText}</span>
      <span className="sep">|</span>
      <span className="status-workspace" data-testid="status-workspace" title={info?.workspace}>workspace: {info?.workspace ?? '…'}</span>
      <span className="grow" />
      <span className="status-door">{info ? `${info.transport === 'electron' ? 'desktop' : 'browser mode'} · ${info.platform}` : ''}</span>
    </footer>
  );
}
