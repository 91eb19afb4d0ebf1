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

/**
 * True for a Host header naming loopback literally (`localhost`, `127.x.y.z`, `[::1]`, any port). A page on another
 * site can only make a browser send such a Host by actually connecting to loopback, so DNS rebinding cannot produce
 * one; an SSH tunnel (`ssh -L 9000:127.0.0.1:PORT`) does, with the tunnel's own port.
 */
export function isLoopbackHostHeader(host: string | undefined): boolean {
  if (!host) return false;
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/i.exec(host);
  if (!m) return false;
  if (m[2] !== undefined && (Number(m[2]) < 1 || Number(m[2]) > 65535)) return false;
  const name = m[1]!.toLowerCase();
  if (name === 'localhost') return true;
  if (name.startsWith('[')) return isLoopbackAddress(name.slice(1, -1));
  return net.isIPv4(name) && isLoopbackAddress(name);
}

/**
 * Checks a user's `--allow-origin` value: a bare origin (`http(s)://host[:port]`), nothing looser. Returns the origin
 * as browsers send it, or throws a message naming the option.
 */
export function parseAllowedOrigin(value: string): string {
  let u: URL | null = null;
  try {
    u = new URL(value);
  } catch {
    u = null;
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== value.replace(/\/$/, '').toLowerCase()) {
    throw new Error(`--allow-origin ${JSON.stringify(value)}: expected an origin such as http://gpu-box.lab:8765 (scheme, host and port; no path, no wildcard)`);
  }
  return u.origin;
}

export interface AccessPolicy {
  token: string;
  /** Origins a browser may connect from (the server's own, and each `--allow-origin`). */
  allowedOrigins: Set<string>;
  /** Host headers accepted besides any loopback one (guards against DNS rebinding). */
  allowedHosts: Set<string>;
  /** Accept connections from non-loopback addresses (only when the user passed --host). */
  allowRemote: boolean;
}

export type AccessVerdict = { ok: true } | { ok: false; status: 401 | 403; reason: string };

export function checkAccess(policy: AccessPolicy, req: { remoteAddress: string | undefined; host: string | undefined; origin: string | undefined; token: string | null }): AccessVerdict {
  if (!policy.allowRemote && !isLoopbackAddress(req.remoteAddress)) {
    return { ok: false, status: 403, reason: `connections from ${req.remoteAddress ?? 'an unknown address'} are refused; start with --host to allow remote clients` };
  }
  const host = req.host?.toLowerCase();
  if (!policy.allowRemote && (!host || !(policy.allowedHosts.has(host) || isLoopbackHostHeader(host)))) {
    return { ok: false, status: 403, reason: `unexpected Host header ${JSON.stringify(req.host ?? '')}` };
  }
  // Browsers always send Origin on WebSocket upgrades; a non-browser client (CLI, tests) may omit it.
  // On loopback a page is let in when it is the server's own page as the browser reached it (a tunnel's port
  // included): its Origin is exactly http://<the loopback Host it sent>. Remote origins need --allow-origin, since
  // a rebinding page is same-origin with whatever Host it sends.
  if (req.origin !== undefined && !policy.allowedOrigins.has(req.origin)) {
    const sameLoopbackOrigin = !policy.allowRemote && host !== undefined && isLoopbackHostHeader(host) && req.origin === `http://${host}`;
    if (!sameLoopbackOrigin) {
      const hint = policy.allowRemote ? '; to use Loupe from a browser at that address, restart with --allow-origin ' + req.origin : '';
      return { ok: false, status: 403, reason: `origin ${req.origin} is not allowed${hint}` };
    }
  }
  if (!tokenMatches(policy.token, req.token)) {
    return { ok: false, status: 401, reason: 'missing or wrong token: open the URL Loupe printed (it carries ?token=…)' };
  }
  return { ok: true };
}
