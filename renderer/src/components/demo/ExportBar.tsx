import { useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useDemoStore } from '../../stores/useDemoStore';
import { getClient } from '../../client';

/** Export the shown branch as a self-contained HTML page or an animation. */
export function ExportBar() {
  const exportAs = useDemoStore((s) => s.exportAs);
  const exporting = useDemoStore((s) => s.exporting);
  const exports = useDemoStore(useShallow((s) => s.exports));
  const client = getClient();
  // Electron: each export is saved where the user chooses (the system's save dialog); the line says where it went.
  const [saved, setSaved] = useState<Record<string, string>>({});
  const save = async (format: string, name: string) => {
    try {
      const to = await client.saveExport?.(name);
      setSaved((m) => ({ ...m, [format]: to ? `saved to ${to}` : 'not saved (cancelled)' }));
    } catch (err) {
      setSaved((m) => ({ ...m, [format]: `not saved: ${err instanceof Error ? err.message : String(err)}` }));
    }
  };
  return (
    <div className="demo-export">
      <span className="muted">Export:</span>
      <button type="button" className="btn btn-sm" disabled={exporting} onClick={() => void exportAs('html')} data-testid="export-html">HTML page</button>
      <button type="button" className="btn btn-sm" disabled={exporting} onClick={() => void exportAs('webp')} data-testid="export-webp">Animated WebP</button>
      <button type="button" className="btn btn-sm" disabled={exporting} onClick={() => void exportAs('gif')} data-testid="export-gif">GIF</button>
      {exporting ? <span className="muted">exporting…</span> : null}
      {exports.map((e) => (
        <span key={e.format} className="demo-export-result" data-testid={`export-result-${e.format}`} title={e.path}>
          {client.exportUrl(e.name) ? (
            <a className="btn btn-sm btn-primary" href={client.exportUrl(e.name) ?? undefined} download={e.name} data-testid={`export-download-${e.format}`}>Download {e.format.toUpperCase()}</a>
          ) : client.saveExport ? (
            <>
              <button type="button" className="btn btn-sm btn-primary" onClick={() => void save(e.format, e.name)} data-testid={`export-save-${e.format}`}>Save {e.format.toUpperCase()}…</button>
              {saved[e.format] ? <span className="muted" data-testid={`export-saved-${e.format}`}> {saved[e.format]}</span> : null}
            </>
          ) : (
            `${e.format}: ${e.path}`
          )}{' '}
          <span className="muted">({(e.bytes / 1024).toFixed(0)} KB{e.frames ? `, ${e.frames} frames` : ''})</span>
        </span>
      ))}
    </div>
  );
}
