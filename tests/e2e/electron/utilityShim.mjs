// STAND-IN, part of the Electron harness (tests/e2e/electron/fakeElectron.ts): the one fake this project allows.
// Loaded with `node --import` into the forked Node process that stands in for Electron's utilityProcess. It gives
// the core bundle what Electron gives a utility process: `process.parentPort` (messages from and to main, with
// MessagePorts as `ports`) and `process.resourcesPath`. Ports are carried over the fork's IPC channel by id.
import { EventEmitter } from 'node:events';

const ports = new Map();

class ShimPort extends EventEmitter {
  constructor(id) {
    super();
    this.id = id;
  }
  postMessage(data) {
    process.send({ kind: 'port', id: this.id, data });
  }
  start() {}
  close() {
    ports.delete(this.id);
    this.emit('close');
  }
}

const parentPort = new EventEmitter();
parentPort.postMessage = (data) => process.send({ kind: 'parent', data });

process.on('message', (m) => {
  if (m.kind === 'parent') {
    const given = (m.ports || []).map((id) => {
      const p = new ShimPort(id);
      ports.set(id, p);
      return p;
    });
    parentPort.emit('message', { data: m.data, ports: given });
  } else if (m.kind === 'port') {
    const p = ports.get(m.id);
    if (p) p.emit('message', { data: m.data, ports: [] });
  }
});
// Like a utility process, this one ends with its parent.
process.on('disconnect', () => process.exit(0));

Object.defineProperty(process, 'parentPort', { value: parentPort, enumerable: false });
if (process.env.LOUPE_HARNESS_RESOURCES_PATH) process.resourcesPath = process.env.LOUPE_HARNESS_RESOURCES_PATH;
