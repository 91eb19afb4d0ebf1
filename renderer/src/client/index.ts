/**
 * The renderer's one way to reach the core. It picks Electron's bridge when the preload exposed
 * `window.loupe`, else the browser-mode WebSocket; the rest of the UI never knows which.
 */
import type { LoupeBridge, LoupeClient } from '../../../app/contract';
import { createBridgeClient } from './bridgeClient';
import { createWsClient } from './wsClient';

declare global {
  interface Window {
    loupe?: LoupeBridge;
  }
}

let client: LoupeClient | null = null;

export function getClient(): LoupeClient {
  if (client) return client;
  client = window.loupe ? createBridgeClient(window.loupe) : createWsClient(readToken());
  return client;
}

/** Browser mode: the token arrives in the URL once, is kept for this tab and removed from the address bar. */
function readToken(): string {
  const url = new URL(window.location.href);
  const fromUrl = url.searchParams.get('token');
  if (fromUrl) {
    sessionStorage.setItem('loupe.token', fromUrl);
    url.searchParams.delete('token');
    window.history.replaceState(null, '', url.toString());
    return fromUrl;
  }
  return sessionStorage.getItem('loupe.token') ?? '';
}
