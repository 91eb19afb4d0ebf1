/**
 * Property tests of the browser-mode access rules (pure functions, no server): whatever Host and Origin a client
 * sends, a loopback server lets in only loopback Host names with its own or the same-origin page, and a server on
 * --host only the origins named by --allow-origin. Hosts are drawn from loopback forms, rebinding-style look-alikes
 * (`localhost.evil.example`, `127.0.0.1.nip.io`, `0.0.0.0`), ports, case changes and arbitrary Unicode.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { checkAccess, isLoopbackHostHeader, parseAllowedOrigin, type AccessPolicy } from '../../../main/server/security';

const TOKEN = 'a'.repeat(48);
const PORT = 8765;

/** An independent reading of "this Host names loopback": WHATWG URL parsing, then the loopback names. */
function oracleLoopback(host: string): boolean {
  if (/[/?#@\\\s]/.test(host)) return false;
  let u: URL;
  try {
    u = new URL(`http://${host}`);
  } catch {
    return false;
  }
  // IPv4-mapped 127.x.y.z ([::ffff:127.0.0.1], which URL writes as [::ffff:7f00:1]) is loopback too.
  return u.hostname === 'localhost' || u.hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(u.hostname) || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(u.hostname);
}

const name = fc.oneof(
  fc.constantFrom('localhost', 'LocalHost', '127.0.0.1', '127.1.2.3', '[::1]', '[0:0:0:0:0:0:0:1]', '0.0.0.0', '[::]', 'localhost.', 'localhost.evil.example', '127.0.0.1.nip.io', 'evil.example', '10.0.0.1', '[::ffff:127.0.0.1]', '128.0.0.1', '127.0.0.256'),
  fc.domain(),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);
const port = fc.oneof(fc.constant(''), fc.integer({ min: 0, max: 70000 }).map((p) => `:${p}`), fc.string({ maxLength: 6 }).map((s) => `:${s}`));
const host = fc.tuple(name, port).map(([n, p]) => `${n}${p}`);
const origin = fc.oneof(
  fc.constant(undefined),
  host.map((h) => `http://${h}`),
  host.map((h) => `https://${h}`),
  fc.constantFrom('null', 'http://evil.example', `http://127.0.0.1:${PORT}`, 'http://gpu-box.lab:8765'),
  fc.string({ maxLength: 30 }),
);

const own = new Set([`http://127.0.0.1:${PORT}`, `http://localhost:${PORT}`, `http://[::1]:${PORT}`]);
const loopbackPolicy: AccessPolicy = { token: TOKEN, allowedOrigins: new Set(own), allowedHosts: new Set([`127.0.0.1:${PORT}`, `localhost:${PORT}`, `[::1]:${PORT}`]), allowRemote: false };

describe('access rules, property-tested', () => {
  it('on loopback: only loopback Host names, and only the server’s own or the same-origin page', () => {
    fc.assert(
      fc.property(host, origin, (h, o) => {
        const v = checkAccess(loopbackPolicy, { remoteAddress: '127.0.0.1', host: h, origin: o, token: TOKEN });
        if (v.ok) {
          expect(oracleLoopback(h), h).toBe(true);
          if (o !== undefined) expect(own.has(o) || o === `http://${h.toLowerCase()}`, `${h} ${o}`).toBe(true);
        }
      }),
      { numRuns: 5000, seed: 22 },
    );
  });

  it('on loopback: any loopback Host and port, with its own origin, gets in (the SSH tunnel case)', () => {
    const loopName = fc.constantFrom('localhost', '127.0.0.1', '127.0.0.2', '[::1]');
    fc.assert(
      fc.property(loopName, fc.integer({ min: 1, max: 65535 }), (n, p) => {
        const h = `${n}:${p}`;
        expect(isLoopbackHostHeader(h)).toBe(true);
        expect(checkAccess(loopbackPolicy, { remoteAddress: '127.0.0.1', host: h, origin: `http://${h}`, token: TOKEN })).toEqual({ ok: true });
        expect(checkAccess(loopbackPolicy, { remoteAddress: '127.0.0.1', host: h, origin: `http://${h}`, token: 'b'.repeat(48) })).toMatchObject({ ok: false, status: 401 });
      }),
      { numRuns: 500, seed: 22 },
    );
  });

  it('with --host: only the origins named by --allow-origin (besides the server’s own), whatever the Host', () => {
    const allowed = parseAllowedOrigin('http://gpu-box.lab:8765');
    const policy: AccessPolicy = { ...loopbackPolicy, allowRemote: true, allowedOrigins: new Set([...own, allowed]) };
    fc.assert(
      fc.property(host, origin, fc.constantFrom('10.1.2.3', '127.0.0.1', '::ffff:192.168.0.9'), (h, o, addr) => {
        const v = checkAccess(policy, { remoteAddress: addr, host: h, origin: o, token: TOKEN });
        if (o !== undefined) expect(v.ok, `${h} ${o}`).toBe(policy.allowedOrigins.has(o));
      }),
      { numRuns: 5000, seed: 22 },
    );
  });
});
