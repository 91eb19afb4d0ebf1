/**
 * Browser-mode access rules, kept pure so they can be tested directly:
 * loopback only unless the user chose a host, a random token like Jupyter's, and an Origin check.
 */
import crypto from 'node:crypto';
import net from 'node:net';

export function newToken(): string {
  return crypto.randomBytes(24).toString('hex');
}

/** True for 127.0.0.0/8, ::1 and IPv4-mapped loopback (::ffff:127.x.y.z). */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  if (net.isIPv4(a)) return a.split('.')[0] === '127';
  if (net.isIPv6(a)) return a === '::1' || a === '0:0:0:0:0:0:0:1';
  return false;
}

/** Constant-time token comparison. */
export function tokenMatches(expected: string, given: string | null | undefined): boolean {
  if (!given) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

export interface AccessPolicy {
  token: string;
  /** Origins a browser may connect from (the server's own). */
  allowedOrigins: Set<string>;
  /** Host headers accepted (guards against DNS rebinding). */
  allowedHosts: Set<string>;
  /** Accept connections from non-loopback addresses (only when the user passed --host). */
  allowRemote: boolean;
}

export type AccessVerdict = { ok: true } | { ok: false; status: 401 | 403; reason: string };

export function checkAccess(policy: AccessPolicy, req: { remoteAddress: string | undefined; host: string | undefined; origin: string | undefined; token: string | null }): AccessVerdict {
  if (!policy.allowRemote && !isLoopbackAddress(req.remoteAddress)) {
    return { ok: false, status: 403, reason: `connections from ${req.remoteAddress ?? 'an unknown address'} are refused; start with --host to allow remote clients` };
  }
  if (!policy.allowRemote && (!req.host || !policy.allowedHosts.has(req.host.toLowerCase()))) {
    return { ok: false, status: 403, reason: `unexpected Host header ${JSON.stringify(req.host ?? '')}` };
  }
  // Browsers always send Origin on WebSocket upgrades; a non-browser client (CLI, tests) may omit it.
  if (req.origin !== undefined && !policy.allowedOrigins.has(req.origin)) {
    return { ok: false, status: 403, reason: `origin ${req.origin} is not allowed` };
  }
  if (!tokenMatches(policy.token, req.token)) {
    return { ok: false, status: 401, reason: 'missing or wrong token: open the URL Loupe printed (it carries ?token=…)' };
  }
  return { ok: true };
}
