/**
 * Turns for a shared engine, fair across clients: each client has its own FIFO, and a free slot goes to the next
 * client in rotation, so a client with many (or long) requests queued cannot hold back a client with one.
 */
export class FairQueue {
  private readonly waiting = new Map<string, Array<() => void>>();
  /** Clients with something waiting, in the order they get their next turn. */
  private readonly rotation: string[] = [];
  private running = 0;

  constructor(
    private readonly slots: number,
    /** Most requests one client may have waiting; more are refused (429) rather than queued without bound. */
    readonly maxWaitingPerClient: number,
  ) {}

  /** How many requests `client` has waiting (not running). */
  waitingFor(client: string): number {
    return this.waiting.get(client)?.length ?? 0;
  }

  /**
   * Wait for a turn; resolves with a release function to call when done. Aborting `signal` while waiting gives up the
   * place in line (the promise rejects with the signal's reason).
   */
  acquire(client: string, signal?: AbortSignal): Promise<() => void> {
    return new Promise((resolve, reject) => {
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        this.running--;
        this.pump();
      };
      const start = () => {
        signal?.removeEventListener('abort', onAbort);
        this.running++;
        resolve(release);
      };
      const onAbort = () => {
        const list = this.waiting.get(client);
        const i = list?.indexOf(start) ?? -1;
        if (list && i >= 0) {
          list.splice(i, 1);
          if (list.length === 0) this.drop(client);
        }
        reject(signal?.reason ?? new Error('aborted'));
      };
      if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      const list = this.waiting.get(client);
      if (list) list.push(start);
      else {
        this.waiting.set(client, [start]);
        this.rotation.push(client);
      }
      this.pump();
    });
  }

  private drop(client: string): void {
    this.waiting.delete(client);
    const i = this.rotation.indexOf(client);
    if (i >= 0) this.rotation.splice(i, 1);
  }

  private pump(): void {
    while (this.running < this.slots && this.rotation.length > 0) {
      const client = this.rotation.shift()!;
      const list = this.waiting.get(client)!;
      const next = list.shift()!;
      // Back of the line for this client's next request.
      if (list.length > 0) this.rotation.push(client);
      else this.waiting.delete(client);
      next();
    }
  }
}
