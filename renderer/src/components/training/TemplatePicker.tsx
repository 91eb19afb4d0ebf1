import { useState } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useTrainingStore } from '../../stores/useTrainingStore';

/** Choose a job template; says where its defaults come from and whether it can run in this build. */
export function TemplatePicker() {
  const templates = useTrainingStore(useShallow((s) => s.templates));
  const templateId = useTrainingStore((s) => s.templateId);
  const select = useTrainingStore((s) => s.selectTemplate);
  const recheck = useTrainingStore((s) => s.recheckTemplates);
  const [checking, setChecking] = useState(false);
  const t = templates.find((x) => x.id === templateId);
  return (
    <div className="tr-section">
      <label className="tr-label" htmlFor="tr-template">Template</label>
      <select id="tr-template" className="input" data-testid="template-select" value={templateId ?? ''} onChange={(e) => select(e.target.value)}>
        {templates.map((x) => (
          <option key={x.id} value={x.id}>
            {x.title}
            {x.available ? '' : ` — ${x.unavailableReason ?? 'not in this build'}`}
          </option>
        ))}
      </select>
      {t ? (
        <div className="tr-template-info">
          <p>{t.description}</p>
          <p className="muted tr-small">Defaults: {t.source}</p>
          {t.notice ? (
            <p className={t.available ? 'tr-notice' : 'tr-notice tr-notice-bad'} data-testid="template-notice" role={t.available ? undefined : 'alert'}>
              {t.notice}
            </p>
          ) : null}
          {!t.available ? (
            <button
              type="button"
              className="btn"
              data-testid="template-recheck"
              disabled={checking}
              onClick={() => {
                setChecking(true);
                void recheck().finally(() => setChecking(false));
              }}
            >
              {checking ? 'Checking…' : 'Check again'}
            </button>
          ) : null}
        </div>
      ) : null}
    </div>
  );
}
