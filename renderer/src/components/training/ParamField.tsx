import type { TemplateField } from '../../../../app/contract';
import type { FormValue } from '../../stores/useTrainingStore';

function hint(f: TemplateField): string {
  const parts: string[] = [];
  if (f.min !== undefined) parts.push(`${f.exclusiveMin ? '>' : '≥'} ${f.min}`);
  if (f.max !== undefined) parts.push(`≤ ${f.max}`);
  if (f.nullable) parts.push('empty = off');
  return parts.join(', ');
}

/** One template parameter: the right input for its type, its default as placeholder, and its error. */
export function ParamField({ field, value, error, onChange }: { field: TemplateField; value: FormValue | undefined; error: string | undefined; onChange: (v: FormValue) => void }) {
  const id = `tr-f-${field.name}`;
  const cls = `input${error ? ' input-bad' : ''}`;
  const placeholder = field.default === undefined || field.default === null ? (field.required ? 'required' : '') : String(field.default);
  let input;
  switch (field.type) {
    case 'boolean':
      input = <input id={id} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />;
      break;
    case 'enum':
      input = (
        <select id={id} className={cls} value={String(value ?? '')} onChange={(e) => onChange(e.target.value)}>
          {(field.options ?? []).map((o) => (
            <option key={o} value={o}>{o}</option>
          ))}
        </select>
      );
      break;
    case 'enum[]': {
      const sel = Array.isArray(value) ? value : [];
      input = (
        <span className="tr-multi">
          {(field.options ?? []).map((o) => (
            <label key={o}>
              <input type="checkbox" checked={sel.includes(o)} onChange={(e) => onChange(e.target.checked ? [...sel, o] : sel.filter((x) => x !== o))} /> {o}
            </label>
          ))}
        </span>
      );
      break;
    }
    case 'text':
    case 'string[]':
      input = <textarea id={id} className={`${cls} tr-textarea`} rows={field.type === 'text' ? 8 : 2} spellCheck={false} value={String(value ?? '')} placeholder={field.type === 'string[]' ? 'one per line' : placeholder} onChange={(e) => onChange(e.target.value)} />;
      break;
    default:
      input = (
        <input id={id} className={cls} type="text" inputMode={field.type === 'string' ? 'text' : 'decimal'} value={String(value ?? '')} placeholder={placeholder} onChange={(e) => onChange(e.target.value)} />
      );
  }
  const h = hint(field);
  return (
    <div className={`tr-field${field.type === 'text' ? ' tr-field-wide' : ''}`} data-testid="param-field" data-field={field.name}>
      <label htmlFor={id} className="tr-label" title={field.description}>
        {field.name}
        {field.required ? <span className="tr-req"> *</span> : null}
      </label>
      {input}
      {error ? (
        <span className="tr-error" data-testid="field-error" role="alert">{error}</span>
      ) : field.description || h ? (
        <span className="muted tr-small">{[field.description, h].filter(Boolean).join(' · ')}</span>
      ) : null}
    </div>
  );
}
