import { useEffect } from 'react';
import { useLabelsStore } from '../../stores/useLabelsStore';
import { useAppStore } from '../../stores/useAppStore';

const k = (x: number | null): string => (x === null ? 'n/a' : x.toFixed(3));

/** Inter-annotator agreement over the samples every annotator labelled (Cohen for 2, Fleiss for more). */
export function AgreementPanel() {
  const agreement = useLabelsStore((s) => s.agreement);
  const note = useLabelsStore((s) => s.agreementNote);
  const load = useLabelsStore((s) => s.loadAgreement);
  const labelsVersion = useLabelsStore((s) => s.undoStack.length);
  const taxonomy = useLabelsStore((s) => s.config?.taxonomy);
  const who = useAppStore((s) => s.settings?.annotator ?? '');
  // Recompute a moment after labelling pauses, not on every key press.
  useEffect(() => {
    const t = setTimeout(() => void load(), labelsVersion ? 400 : 0);
    return () => clearTimeout(t);
  }, [load, labelsVersion, who]);
  const name = (id: string) => taxonomy?.find((l) => l.id === id)?.name ?? id;
  return (
    <div className="card an-agreement" data-testid="agreement-panel">
      <div className="an-tax-head">
        <h3>Agreement</h3>
        <button type="button" className="btn btn-sm" onClick={() => void load()} data-testid="agreement-refresh">Refresh</button>
      </div>
      {agreement ? (
        <>
          <p>
            <span className="muted small">{agreement.method === 'cohen' ? "Cohen's κ" : "Fleiss' κ"} ({agreement.annotators.join(' vs ')}), primary label</span>
            <br />
            <b className="big-number" data-testid="agreement-kappa">{k(agreement.primaryKappa)}</b>
            <span className="muted small"> on <span data-testid="agreement-units">{agreement.units}</span> sample(s) all labelled; {agreement.partial} labelled by only some</span>
          </p>
          <p className="small">mean per-label κ <b data-testid="agreement-mean">{k(agreement.meanPerLabelKappa)}</b></p>
          <table className="table compact">
            <thead><tr><th>Label</th><th className="num">κ</th><th className="num">positives</th></tr></thead>
            <tbody>
              {agreement.perLabel.filter((l) => l.positives.some((p) => p > 0)).map((l) => (
                <tr key={l.label}><td>{name(l.label)}</td><td className="num">{k(l.kappa)}</td><td className="num">{l.positives.join(' / ')}</td></tr>
              ))}
            </tbody>
          </table>
        </>
      ) : (
        <p className="muted small" data-testid="agreement-note">{note ?? 'Computing…'}</p>
      )}
    </div>
  );
}
