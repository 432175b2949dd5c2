/** A small SSE client for tests: connects with fetch, parses frames, stops on demand. */

export interface SseMessage {
  id: string | undefined;
  data: string;
}

export interface SseClient {
  messages: SseMessage[];
  /** Resolves once `n` messages arrived (rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<SseMessage[]>;
  close(): void;
  status: number;
}

export async function connectSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const abort = new AbortController();
  const res = await fetch(url, { headers, signal: abort.signal });
  const messages: SseMessage[] = [];
  const waiters: (() => void)[] = [];
  if (res.ok && res.body) {
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buf += value;
          let cut = buf.indexOf("\n\n");
          while (cut >= 0) {
            const frame = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            let id: string | undefined;
            const data: string[] = [];
            for (const line of frame.split("\n")) {
              if (line.startsWith("id: ")) id = line.slice(4);
              else if (line.startsWith("data: ")) data.push(line.slice(6));
            }
            if (data.length > 0) messages.push({ id, data: data.join("\n") });
            cut = buf.indexOf("\n\n");
          }
          for (const w of waiters.splice(0)) w();
        }
      } catch {
        // aborted
      }
    })();
  }
  return {
    messages,
    status: res.status,
    async waitFor(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < n) {
        if (Date.now() > deadline) throw new Error(`waited for ${n} SSE messages, got ${messages.length}`);
        await new Promise<void>((res) => {
          waiters.push(res);
          setTimeout(res, 100);
        });
      }
      return messages.slice(0, n);
    },
    close: () => abort.abort(),
  };
}
