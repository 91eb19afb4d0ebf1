import { useTrainingStore } from '../../stores/useTrainingStore';

/** Says where secrets are kept: "OS keychain (Electron safeStorage)" or "encrypted file (browser mode)", with why on hover. */
export function SecretStoreLabel() {
  const label = useTrainingStore((s) => s.secretStore?.label ?? null);
  const kind = useTrainingStore((s) => s.secretStore?.kind ?? null);
  const note = useTrainingStore((s) => s.secretStore?.note ?? null);
  if (!label) return null;
  return (
    <p className="muted tr-small" data-testid="secret-store" data-kind={kind ?? undefined} title={note ?? undefined}>
      Secrets: {label}
      {note && kind === 'encrypted-file' ? ` — ${note}` : null}
    </p>
  );
}
