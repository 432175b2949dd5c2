/**
 * The scripted model: a real local HTTP server speaking the OpenAI chat-completions protocol, whose
 * replies come from a script. Tests point the real client path (the AI SDK's OpenAI-compatible
 * provider) at it, and so do the offline demo and users' own tests. Every request is recorded.
 *
 * @example
 * const model = await startScriptedModel({ script: { turns: [{ text: "hello" }] } });
 * onTestFinished(() => model.close());
 * // RATCHET_MODEL=openai-compatible:scripted OPENAI_BASE_URL=<model.url>
 * expect(model.requests()).toHaveLength(1);
 *
 * Routes: `POST /v1/chat/completions` (streamed SSE or one JSON reply), `GET /v1/models`,
 * `GET /__requests` (the request log), `POST /__reset` (forget requests and start the script over;
 * a JSON body `{"script": …}` also replaces the script). The script format is in docs/models.md.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCode, RatchetError } from "../core/index.js";
import {
  BodyTooLarge,
  MAX_SCRIPTED_REQUEST_BYTES,
  parseBody,
  type RecordedRequest,
  readBody,
  recordedHeaders,
  sendJson,
} from "./scripted-model-http.js";
import { completionBody, errorBody, type ReplyContext, streamPlan } from "./scripted-model-replies.js";
import {
  loadScriptFile,
  parseScript,
  pickTurn,
  requestChars,
  requestView,
  type Script,
  type ScriptInput,
  type ScriptReply,
} from "./scripted-model-script.js";

export type { RecordedRequest } from "./scripted-model-http.js";
export { MAX_SCRIPTED_REQUEST_BYTES } from "./scripted-model-http.js";

export type ScriptedModelOptions = (
  | {
      /** A script object, or the path of a JSON/YAML script file. */
      script: ScriptInput | string;
      tripwire?: false;
    }
  | {
      /** Answer every request with a 500 (and record it): proves that no model is called. */
      tripwire: true;
      script?: undefined;
    }
) & {
  /** Default 0: any free port. */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
};

export interface ScriptedModel {
  /** Base URL ending in `/v1` (what `OPENAI_BASE_URL` is set to). */
  readonly url: string;
  readonly port: number;
  /** A copy of every request received so far (`/__` routes excluded). */
  requests(): RecordedRequest[];
  /** Forgets the requests and starts the script over (optionally with a new script). */
  reset(script?: ScriptInput | string): void;
  /** Stops the server: open connections are closed, pending delayed replies dropped. */
  close(): Promise<void>;
}

function loadScript(script: ScriptInput | string): Script {
  return typeof script === "string" ? loadScriptFile(script) : parseScript(script);
}

/**
 * Starts a scripted model on a local port.
 * @throws RatchetError `schema_violation` / `unreadable_input` / `malformed_input` for a bad script.
 */
export async function startScriptedModel(options: ScriptedModelOptions): Promise<ScriptedModel> {
  const tripwire = options.tripwire === true;
  let script: Script = tripwire ? parseScript({}) : loadScript(options.script as ScriptInput | string);
  let log: RecordedRequest[] = [];
  let uses: number[] = [];
  let completions = 0;
  const timers = new Set<NodeJS.Timeout>();
  /** Replies the script itself broke off (`cut: "reset"`): not counted as `aborted` by the client. */
  const resets = new WeakSet<ServerResponse>();

  /** Writes `text`, then destroys the connection once it is on the wire (a stream that breaks off). */
  function resetAfter(res: ServerResponse, text: string): void {
    resets.add(res);
    res.write(text, () => res.socket?.destroy());
  }

  function reset(next?: ScriptInput | string): void {
    if (next !== undefined) script = loadScript(next);
    log = [];
    uses = [];
    completions = 0;
  }

  async function completion(res: ServerResponse, entry: RecordedRequest, body: unknown): Promise<void> {
    if (!body || typeof body !== "object" || !Array.isArray((body as Record<string, unknown>).messages)) {
      entry.status = 400;
      return sendJson(
        res,
        400,
        errorBody("scripted model: the body must be a JSON object with `messages`", "invalid_request_error"),
      );
    }
    const request = body as Record<string, unknown>;
    const requestNo = ++completions;
    const view = requestView(request);
    const index = pickTurn(script, uses, view);
    let reply: ScriptReply | undefined;
    if (index >= 0) {
      uses[index] = (uses[index] ?? 0) + 1;
      reply = script.turns[index];
      entry.turn = index;
    } else if (script.default) {
      reply = script.default;
      entry.turn = "default";
    }
    if (!reply) {
      const left = script.turns.filter((t, i) => (uses[i] ?? 0) < (t.repeat ?? 1)).length;
      const why = left > 0 ? ` (${left} turn(s) left, none matches)` : "";
      entry.status = 500;
      return sendJson(
        res,
        500,
        errorBody(`scripted model: no turn left for request #${requestNo}${why}`, "server_error"),
      );
    }
    if (reply.delay_ms) {
      const wait = reply.delay_ms;
      const gone = await new Promise<boolean>((done) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          res.off("close", onClose);
          done(false);
        }, wait);
        const onClose = () => {
          clearTimeout(timer);
          timers.delete(timer);
          done(true);
        };
        timers.add(timer);
        res.once("close", onClose);
      });
      if (gone) return;
    }
    if (reply.error) {
      const { status, body: errBody, retry_after } = reply.error;
      entry.status = status;
      const headers: Record<string, string> =
        retry_after === undefined ? {} : { "retry-after": String(retry_after) };
      const type =
        status === 429 ? "rate_limit_error" : status >= 500 ? "server_error" : "invalid_request_error";
      return sendJson(res, status, errBody ?? errorBody(`scripted model: HTTP ${status}`, type), headers);
    }
    const ctx: ReplyContext = {
      requestNo,
      model: view.model ?? "scripted",
      promptChars: requestChars(request),
    };
    entry.status = 200;
    const frame = reply.stream_error
      ? errorBody(
          reply.stream_error.message,
          reply.stream_error.type ?? "server_error",
          reply.stream_error.code,
        )
      : undefined;
    if (request.stream !== true && frame) return sendJson(res, 200, frame);
    if (request.stream !== true) {
      if (!reply.cut) return sendJson(res, 200, completionBody(reply, ctx));
      const text = JSON.stringify(completionBody(reply, ctx));
      res.writeHead(200, { "content-type": "application/json" });
      const half = text.slice(0, Math.floor(text.length / 2));
      return reply.cut === "reset" ? resetAfter(res, half) : void res.end(half);
    }
    const streamOptions = request.stream_options as Record<string, unknown> | undefined;
    const plan = streamPlan(reply, ctx, streamOptions?.include_usage === true);
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    // An error frame replaces the finish chunk: what came before it has reached the client.
    const sent = frame ? [...plan.chunks.slice(0, -1), frame] : plan.chunks;
    const chunks = reply.cut ? sent.slice(0, plan.cutAfter) : sent;
    const frames = chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("");
    if (reply.cut === "reset") return resetAfter(res, frames);
    res.end(reply.cut ? frames : `${frames}data: [DONE]\n\n`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? "GET";
    const path = req.url ?? "/";
    const route = path.split("?")[0] ?? "/";
    res.on("error", () => {});
    let text: string;
    try {
      text = await readBody(req);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        return sendJson(
          res,
          413,
          errorBody(`scripted model: body over ${MAX_SCRIPTED_REQUEST_BYTES} bytes`, "invalid_request_error"),
        );
      }
      return void res.destroy();
    }
    const body = parseBody(text);
    if (route === "/__requests" && method === "GET") return sendJson(res, 200, log);
    if (route === "/__reset" && method === "POST") {
      try {
        // Over HTTP a script is an object, never a path: a client must not make the server read files.
        const next = body && typeof body === "object" ? (body as { script?: unknown }).script : undefined;
        if (next !== undefined && (typeof next !== "object" || next === null)) {
          return sendJson(
            res,
            400,
            errorBody("scripted model: `script` must be a script object", "invalid_request_error"),
          );
        }
        reset(next as ScriptInput | undefined);
        return sendJson(res, 200, { ok: true });
      } catch (err) {
        return sendJson(res, 400, errorBody((err as Error).message, "invalid_request_error"));
      }
    }

    const entry: RecordedRequest = {
      n: log.length + 1,
      method,
      path,
      headers: recordedHeaders(req),
      authorized: req.headers.authorization !== undefined || req.headers["x-api-key"] !== undefined,
      body,
      turn: null,
      status: 0,
      aborted: false,
    };
    log.push(entry);
    res.on("close", () => {
      if (!res.writableFinished && !resets.has(res)) entry.aborted = true;
    });

    if (tripwire) {
      entry.status = 500;
      return sendJson(
        res,
        500,
        errorBody(
          `scripted model (tripwire): no model call was expected, got ${method} ${route}`,
          "server_error",
        ),
      );
    }
    if (route === "/v1/chat/completions" && method === "POST") return completion(res, entry, body);
    if (route === "/v1/models" && method === "GET") {
      entry.status = 200;
      const ids = script.models ?? ["scripted"];
      return sendJson(res, 200, {
        object: "list",
        data: ids.map((id) => ({ id, object: "model", created: 0, owned_by: "ratchet-scripted" })),
      });
    }
    entry.status = 404;
    return sendJson(
      res,
      404,
      errorBody(`scripted model: no route ${method} ${route}`, "invalid_request_error"),
    );
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, errorBody(`scripted model: ${(err as Error).message}`, "server_error"));
      else res.destroy();
    });
  });
  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", (err) =>
      reject(
        new RatchetError(
          ErrorCode.InvalidValue,
          `scripted model cannot listen on ${host}:${options.port ?? 0}: ${err.message}`,
        ),
      ),
    );
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host;

  return {
    url: `http://${shownHost}:${port}/v1`,
    port,
    requests: () => structuredClone(log),
    reset,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
