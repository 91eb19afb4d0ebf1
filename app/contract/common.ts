import { z } from 'zod';

/** A request with no fields. */
export const Empty = z.object({}).strict();
