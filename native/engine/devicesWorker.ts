/** Entry of the device-detection child process (native/engine/devices.ts): probe once, send the report, exit. */
import { probeDevices } from './devices';

probeDevices().then(
  (report) => process.send?.({ report }, () => process.exit(0)),
  (err: unknown) => process.send?.({ error: err instanceof Error ? err.message : String(err) }, () => process.exit(1)),
);
