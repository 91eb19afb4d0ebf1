/** Default episode settings per mode (Pixel Reasoner's eval and train settings, protocol §1 and §3). */
import type { DecodingSettings, EpisodeSettings, RunEpisodeOptions } from './types';

export const EVAL_DECODING: DecodingSettings = { temperature: 0, topP: 1, topK: -1 };
export const TRAIN_DECODING: DecodingSettings = { temperature: 1.0, topP: 0.95, topK: 40, laterTemperature: 0.9 };

/** Fill in defaults: prompt `vcot`, mode `eval`, decoding for the mode. */
export function resolveSettings(s: RunEpisodeOptions['settings'] = {}): EpisodeSettings {
  const mode = s.mode ?? 'eval';
  const base = mode === 'eval' ? EVAL_DECODING : TRAIN_DECODING;
  return { ...s, prompt: s.prompt ?? 'vcot', mode, decoding: { ...base, ...s.decoding } };
}
