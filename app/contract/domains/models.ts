/**
 * Models domain: the models a workspace knows (registered folders and the bundled ones), folder validation, and
 * the model the app keeps loaded. One loaded model is one engine process, shared by the Demo, sweeps and
 * serve-model (app/engines/manager.ts).
 */
import { AttentionCardSchema } from '../attention';
import { z } from 'zod';
import { Empty } from '../common';

/** A model the Models page lists, with what validation found. */
export const ModelEntrySchema = z.object({
  id: z.string(),
  name: z.string(),
  path: z.string(),
  /** True for models that ship with Loupe (listed without being added). */
  bundled: z.boolean(),
  modelType: z.string().optional(),
  dtypes: z.array(z.string()),
  sizeBytes: z.number(),
  memoryEstimateBytes: z.number().optional(),
  /** Additive: the model's attention measure (its folder's attention.json), shown on its card. */
  attention: AttentionCardSchema.optional(),
});
export type ModelEntry = z.infer<typeof ModelEntrySchema>;

export const ModelReportSchema = z.object({
  ok: z.boolean(),
  dir: z.string(),
  /** Problems that stop loading, each naming the file. */
  errors: z.array(z.string()),
  warnings: z.array(z.string()),
  modelType: z.string().optional(),
  dtypes: z.array(z.string()),
  sizeBytes: z.number(),
  dtypeBytes: z.record(z.string(), z.number()),
  memoryEstimateBytes: z.number().optional(),
  /** The sub-folder that holds the model, when `dir` is a card folder around it (e.g. `models/loupe-tiny` → `models/loupe-tiny/model`). */
  suggestion: z.string().optional(),
});
export type ModelReport = z.infer<typeof ModelReportSchema>;

/** The devices a model can be loaded on (the enum every device picker and `models:load` share). */
export const DeviceIdSchema = z.enum(['cpu', 'cuda', 'webgpu', 'dml', 'coreml']);
export type DeviceId = z.infer<typeof DeviceIdSchema>;

/** One device as detection found it (native/engine/devices.ts). */
export const DeviceStatusSchema = z.object({
  id: DeviceIdSchema,
  label: z.string(),
  /** True when a one-node model ran on it just now. */
  available: z.boolean(),
  /** One line: why it cannot run here. */
  reason: z.string().optional(),
  /** One line: how to get it. */
  howTo: z.string().optional(),
  /** onnxruntime's own text, for a "details" disclosure only. */
  details: z.string().optional(),
});
export type DeviceStatus = z.infer<typeof DeviceStatusSchema>;

export const DeviceReportSchema = z.object({
  /** `linux-x64`, `win32-x64`, … */
  platform: z.string(),
  /** The onnxruntime-node version that was probed. */
  onnxruntime: z.string(),
  /** The devices this build offers on this platform, CPU first. */
  devices: z.array(DeviceStatusSchema),
  /** Devices not offered here (another platform's, or not in this build): never shown as choices. */
  hidden: z.array(DeviceIdSchema),
});
export type DeviceReport = z.infer<typeof DeviceReportSchema>;

export const LoadedModelSchema = z.object({
  id: z.string(),
  requestedDevice: z.string(),
  /** The device that actually runs it (after any fallback). */
  device: z.string().nullable(),
  dtype: z.string().nullable(),
  /** One line: why the requested device was not used. */
  fallbackReason: z.string().optional(),
  /** onnxruntime's own text behind `fallbackReason`, for a "details" disclosure. */
  fallbackDetails: z.string().optional(),
  loadMs: z.number(),
});
export type LoadedModel = z.infer<typeof LoadedModelSchema>;

export const modelsCalls = {
  'models:list': { req: Empty, res: z.object({ models: z.array(ModelEntrySchema), loaded: LoadedModelSchema.nullable() }) },
  'models:validate': { req: z.object({ path: z.string().min(1) }).strict(), res: ModelReportSchema },
  'models:add': { req: z.object({ path: z.string().min(1) }).strict(), res: z.object({ model: ModelEntrySchema, report: ModelReportSchema }) },
  'models:remove': { req: z.object({ id: z.string().min(1) }).strict(), res: z.object({ removed: z.boolean() }) },
  'models:load': {
    req: z.object({ id: z.string().min(1), device: DeviceIdSchema.default('cpu'), dtype: z.enum(['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4']).optional() }).strict(),
    res: LoadedModelSchema,
  },
  'models:unload': { req: Empty, res: z.object({ unloaded: z.boolean() }) },
  /** What this build of onnxruntime-node can run here (probed once per core; `fresh` probes again). */
  'models:devices': { req: z.object({ fresh: z.boolean().optional() }).strict(), res: DeviceReportSchema },
} as const;
