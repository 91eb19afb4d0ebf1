import type { AttentionCard } from '../../../../app/contract';

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

/** The model card's "where it looks" line: its attention measure on loupe-synth against the uniform map and a baseline. */
export function AttentionCardLine({ card, testId }: { card: AttentionCard; testId?: string }) {
  const layer = card.best.layer === 'mean' ? 'the mean map' : `layer ${card.best.layer + 1}`;
  // One short line in the models table (the State column keeps its width at 1024 px); the full sentence folds out.
  return (
    <details className="muted models-attention" data-testid={testId} title={`loupe attention (${card.completion} turns); attention.json in the model folder`}>
      <summary data-testid={testId ? `${testId}-summary` : undefined}>
        Where it looks: {layer} · {pct(card.best.inBox)} in the target box (uniform {pct(card.uniform)}) · peak on it {pct(card.best.peakHit)}
      </summary>
      <div data-testid={testId ? `${testId}-full` : undefined}>
        Where it looks ({card.data}): {layer} puts {pct(card.best.inBox)} of its image attention inside the target box (uniform map {pct(card.uniform)}
        {card.baseline ? `, ${card.baseline.model} ${pct(card.baseline.best.inBox)}` : ''}); its peak cell touches the box in {pct(card.best.peakHit)} (chance {pct(card.peakChance)}
        {card.baseline ? `, ${card.baseline.model} ${pct(card.baseline.best.peakHit)}` : ''}); mean of layers {pct(card.mean.inBox)}, peak {pct(card.mean.peakHit)}.
      </div>
    </details>
  );
}
