import type { z } from 'zod';
import type { JobResources } from '../connectors/types';
import type { MetricFormat } from './metrics';

/** A file the job needs next to its script (path relative to the job's working directory). */
export interface TemplateFile {
  path: string;
  content: string;
  mode?: number;
}

/** A side service the job needs (tool server, judge), usually on other GPUs/nodes. */
export interface TemplateService {
  name: string;
  script: string;
  note: string;
}

/** What a template produces: everything a connector needs to run the job, and how to read its metrics. */
export interface TemplateOutput {
  templateId: string;
  /** The main bash script (body; connectors add their headers). */
  script: string;
  env: Record<string, string>;
  files: TemplateFile[];
  services: TemplateService[];
  resources: JobResources;
  metrics: { format: MetricFormat; /** A JSONL metrics file relative to cwd, when the trainer writes one. */ file?: string };
  /** Things the user must know (warnings, manual steps). */
  notes: string[];
}

export interface JobTemplate<S extends z.ZodType = z.ZodType> {
  id: string;
  title: string;
  description: string;
  /** Where the defaults come from. */
  source: string;
  schema: S;
  build(params: z.infer<S>): TemplateOutput;
}
