import { useEffect, useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useModelsStore } from '../../stores/useModelsStore';

/** The option value that reveals the folder / URL field. */
export const OTHER_MODEL = '__other__';

interface Props {
  /** A registered model id, or (with `allowOther`) a folder / URL as typed. */
  value: string;
  onChange(value: string): void;
  /** Offer "Folder or URL…": a free-text reference the core resolves (folder, http://host:port/v1, replay:<file>). */
  allowOther?: boolean;
  testId: string;
  className?: string;
}

/**
 * The one model picker: the registry's models (bundled and added on the Models page) by name, everywhere a model
 * is chosen, so the name the app shows is the name every form and `--model` accepts.
 */
export function ModelPicker({ value, onChange, allowOther = false, testId, className }: Props) {
  const models = useModelsStore(useShallow((x) => x.models));
  const loadModels = useModelsStore((x) => x.load);
  useEffect(() => {
    void loadModels();
  }, [loadModels]);
  const known = models.some((m) => m.id === value);
  // Set by choosing "Folder or URL…"; a value that is no registered name also shows the field (once the list is in).
  const [other, setOther] = useState(false);
  const showOther = allowOther && (other || (value !== '' && !known && models.length > 0));
  return (
    <span className={`model-picker ${className ?? ''}`}>
      <select
        className="input grow"
        value={showOther ? OTHER_MODEL : value}
        onChange={(e) => {
          if (e.target.value === OTHER_MODEL) {
            setOther(true);
            onChange('');
          } else {
            setOther(false);
            onChange(e.target.value);
          }
        }}
        data-testid={testId}
        aria-label="Model"
      >
        {!allowOther && !known ? <option value={value}>{value ? `${value} (not registered)` : 'Choose a model'}</option> : null}
        {allowOther && !showOther && !known ? <option value="">Choose a model</option> : null}
        {models.map((m) => (
          <option key={m.id} value={m.id} title={m.path}>
            {m.id}{m.bundled ? ' (bundled)' : ''}
          </option>
        ))}
        {allowOther ? <option value={OTHER_MODEL}>Folder or URL…</option> : null}
      </select>
      {showOther ? (
        <input className="input grow" value={value} onChange={(e) => onChange(e.target.value)} placeholder="model folder, http://host:port/v1 or replay:<file>" data-testid={`${testId}-path`} required />
      ) : null}
    </span>
  );
}
