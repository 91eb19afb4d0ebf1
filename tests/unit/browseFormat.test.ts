import { describe, expect, it } from 'vitest';
import { count } from '../../renderer/src/components/browse/format';

describe('browse format: count', () => {
  it('groups thousands with commas, as the row count showed them in English', () => {
    for (const n of [0, 7, 999, 1000, 18713, 50000, 1234567, 1000000, -4530, 12.7]) expect(count(n)).toBe(Math.trunc(n).toLocaleString('en-US'));
  });
});
