/** A TCP proxy on 127.0.0.1 in front of a local port, whose live connections can be cut (a dying link) and whose listener can be closed. */
import net from 'node:net';

export interface TcpProxy {
  port: number;
  /** Destroy every live connection; returns how many sockets were cut. New connections are still accepted. */
  cut(): number;
  /** Stop accepting connections (live ones stay until cut). */
  close(): Promise<void>;
  /** The link dies: cut every connection and close the listener. */
  kill(): Promise<void>;
}

export function startProxy(targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const gone = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', gone).on('close', gone);
    upstream.on('error', gone).on('close', gone);
  });
  const cut = (): number => {
    const n = sockets.size;
    for (const s of sockets) s.destroy();
    sockets.clear();
    return n;
  };
  const close = (): Promise<void> => new Promise<void>((r) => server.close(() => r()));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as net.AddressInfo).port,
        cut,
        close,
        kill: async () => {
          const closed = close();
          cut();
          await closed;
        },
      }),
    ),
  );
}
