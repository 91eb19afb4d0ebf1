import { useShallow } from 'zustand/react/shallow';
import { useTrainingStore } from '../../stores/useTrainingStore';
import { ParamField } from './ParamField';

/** The parameters of the chosen template; validated by the core on every change. */
export function ParamForm() {
  const t = useTrainingStore((s) => s.templates.find((x) => x.id === s.templateId));
  const values = useTrainingStore(useShallow((s) => s.values));
  const issues = useTrainingStore(useShallow((s) => s.issues));
  const setValue = useTrainingStore((s) => s.setValue);
  if (!t) return null;
  const known = new Set(t.fields.map((f) => f.name));
  const other = Object.entries(issues).filter(([k]) => !known.has(k));
  return (
    <div className="tr-form" data-testid="param-form">
      {t.fields.map((f) => (
        <ParamField key={`${t.id}:${f.name}`} field={f} value={values[f.name]} error={issues[f.name]} onChange={(v) => setValue(f.name, v)} />
      ))}
      {other.map(([k, m]) => (
        <p key={k} className="tr-error tr-field-wide" role="alert">{k}: {m}</p>
      ))}
    </div>
  );
}
