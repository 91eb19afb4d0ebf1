/** Provider errors in one line (device detection and the engine's fallback share it). */
/**
 * One line for a provider's raw onnxruntime error: what is missing, in words. The raw text stays in `details`.
 * Used by the probe and by the engine when a model load on a device fails (native/engine/qwenRuntime.ts).
 */
export function explainDeviceError(device: string, raw: string): string {
  const t = raw.replace(/\s+/g, ' ');
  if (/No supported adapters|Failed to get a WebGPU adapter|requestAdapter/i.test(t)) return 'no WebGPU adapter: no GPU driver with Vulkan, Metal or Direct3D 12 was found';
  if (/libonnxruntime_providers_(cuda|shared)|onnxruntime_providers_cuda|Cuda: Failed to load shared library/i.test(t)) {
    const lib = /(lib[\w.+-]+\.so(?:\.\d+)*)\s*: cannot open shared object/.exec(t)?.[1];
    return lib && !/providers/.test(lib) ? `the CUDA provider cannot load ${lib} (CUDA/cuDNN libraries not found)` : 'this onnxruntime-node has no CUDA provider library (libonnxruntime_providers_cuda)';
  }
  if (/driver version is insufficient|CUDA driver/i.test(t)) return 'the NVIDIA driver is too old for the CUDA runtime the provider was built for';
  if (/no CUDA-capable device|cudaErrorNoDevice|CUDA failure 100/i.test(t)) return 'no NVIDIA GPU was found';
  if (/DirectML|D3D12|dxgi/i.test(t)) return 'DirectML could not start (no Direct3D 12 GPU)';
  if (/CoreML/i.test(t)) return 'CoreML could not start';
  if (/not supported|Unsupported|unknown (execution )?provider/i.test(t)) return `this onnxruntime-node build cannot run '${device}'`;
  const first = t.split(/(?<=[.!?])\s/)[0] ?? t;
  return `'${device}' failed: ${first.length > 120 ? `${first.slice(0, 117)}…` : first}`;
}
