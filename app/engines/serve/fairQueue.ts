/**
 * Turns for a shared engine, fair across clients (start-time fair queuing): each request is tagged one past the later
 * of its client's previous tag and the tag of the last request started, and the smallest tag goes next. A client
 * with many (or long) requests queued cannot hold back one that arrives later: the newcomer's tag lands right after
 * the request now running, ahead of the backlog. Ties go to the client that has had fewer turns.
 */
interface Waiting {
  client: string;
  tag: number;
  seq: number;
  start: () => void;
}

export class FairQueue {
  private readonly waiting: Waiting[] = [];
  private readonly lastTag = new Map<string, number>();
  private readonly turns = new Map<string, number>();
  /** Tag of the request started last: the queue's virtual time. */
  private now = 0;
  private seq = 0;
  private running = 0;

  constructor(
    private readonly slots: number,
    /** Most requests one client may have waiting; more are refused (429) rather than queued without bound. */
    readonly maxWaitingPerClient: number,
  ) {}

  /** How many requests `client` has waiting (not running). */
  waitingFor(client: string): number {
    let n = 0;
    for (const w of this.waiting) if (w.client === client) n++;
    return n;
  }

  /**
   * Wait for a turn; resolves with a release function to call when done. Aborting `signal` while waiting gives up the
   * place in line (the promise rejects with the signal's reason).
   */
  acquire(client: string, signal?: AbortSignal): Promise<() => void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        this.running--;
        this.pump();
      };
      const tag = Math.max(this.lastTag.get(client) ?? 0, this.now) + 1;
      this.lastTag.set(client, tag);
      const entry: Waiting = {
        client,
        tag,
        seq: this.seq++,
        start: () => {
          signal?.removeEventListener('abort', onAbort);
          this.running++;
          resolve(release);
        },
      };
      const onAbort = () => {
        const i = this.waiting.indexOf(entry);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal?.reason ?? new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.slots && this.waiting.length > 0) {
      let best = 0;
      for (let i = 1; i < this.waiting.length; i++) {
        const a = this.waiting[i]!;
        const b = this.waiting[best]!;
        const ta = this.turns.get(a.client) ?? 0;
        const tb = this.turns.get(b.client) ?? 0;
        if (a.tag < b.tag || (a.tag === b.tag && (ta < tb || (ta === tb && a.seq < b.seq)))) best = i;
      }
      const next = this.waiting.splice(best, 1)[0]!;
      this.now = Math.max(this.now, next.tag);
      this.turns.set(next.client, (this.turns.get(next.client) ?? 0) + 1);
      next.start();
    }
  }
}
