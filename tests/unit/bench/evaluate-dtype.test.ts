/**
 * models/loupe-tiny/evaluate.ts --dtype: one dtype for the whole model, or one per ONNX part (the card compares q8, fp32
 * and a vision encoder in fp32 with the text model in q8); a wrong or partial spec is refused with what was wrong.
 */
import { describe, expect, it } from 'vitest';
import { parseDtype } from '../../../models/loupe-tiny/evaluate';

describe('evaluate.ts --dtype', () => {
  it('takes one dtype or one per ONNX part', () => {
    expect(parseDtype('q8')).toBe('q8');
    expect(parseDtype('fp32')).toBe('fp32');
    expect(parseDtype('vision_encoder=fp32,embed_tokens=q8,decoder_model_merged=q8')).toEqual({
      vision_encoder: 'fp32',
      embed_tokens: 'q8',
      decoder_model_merged: 'q8',
    });
  });

  it('refuses an unknown dtype or part, and a spec that leaves a part out', () => {
    expect(() => parseDtype('q7')).toThrow(/--dtype q7: not a dtype/);
    expect(() => parseDtype('vision=fp32,embed_tokens=q8,decoder_model_merged=q8')).toThrow(/unknown ONNX part 'vision'/);
    expect(() => parseDtype('vision_encoder=fp33,embed_tokens=q8,decoder_model_merged=q8')).toThrow(/vision_encoder=fp33 is not a dtype/);
    expect(() => parseDtype('vision_encoder=fp32')).toThrow(/missing: embed_tokens, decoder_model_merged/);
  });
});
