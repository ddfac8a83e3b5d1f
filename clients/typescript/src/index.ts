// A typed client for chatql: every operation is a TypedDocumentNode
// generated from the schema (src/generated/, by `npm run generate`), so its
// variables and its result are checked by the compiler.
import { print } from "graphql";
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { createClient, type Client as SocketClient } from "graphql-ws";
import {
  LoginDocument,
  PostMessageDocument,
  RefreshTokenDocument,
  SendDirectMessageDocument,
  type LoginMutation,
  type MessageFieldsFragment,
} from "./generated/graphql.js";

export * from "./generated/graphql.js";

/** An error the server answered, with its `extensions.code` (UNAUTHENTICATED, RATE_LIMITED, ...). */
export class ChatError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = "ChatError";
  }
}

/** No answer came: the network failed, or the server did not answer. The request may have been done. */
export class NoAnswerError extends Error {
  constructor(cause: unknown) {
    super(`the server did not answer: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "NoAnswerError";
  }
}

export type Session = LoginMutation["login"];

export interface ChatClientOptions {
  /** The GraphQL endpoint, e.g. http://localhost:8080/query (its websocket is the same URL, ws: or wss:). */
  url: string;
  /** A session from login, or a bot's API key as `token`. */
  session?: Partial<Session> & { token: string };
  /** A WebSocket implementation where there is no global one (Node before 22: the `ws` package). */
  webSocketImpl?: unknown;
  /** fetch, by default the global one. */
  fetch?: typeof fetch;
}

type Variables<V> = V extends Record<string, never> ? V | undefined : V;

export class ChatClient {
  readonly url: string;
  session: (Partial<Session> & { token: string }) | null;
  private readonly fetchImpl: typeof fetch;
  private readonly webSocketImpl: unknown;
  private socket: SocketClient | null = null;
  /** The refresh on its way or whose answer was lost: its token and clientRefreshId. */
  private pendingRefresh: { token: string; id: string } | null = null;

  constructor(options: ChatClientOptions) {
    this.url = options.url;
    this.session = options.session ?? null;
    this.fetchImpl = options.fetch ?? fetch;
    this.webSocketImpl = options.webSocketImpl;
  }

  /** Runs a query or mutation over HTTP; a response with errors throws the first as a ChatError. */
  async request<R, V>(document: TypedDocumentNode<R, V>, variables?: Variables<V>): Promise<R> {
    let resp: Response;
    try {
      resp = await this.fetchImpl(this.url, {
        method: "POST",
        headers: {
          "Content-Type": "application/json",
          Accept: "application/graphql-response+json, application/json",
          ...(this.session ? { Authorization: `Bearer ${this.session.token}` } : {}),
        },
        body: JSON.stringify({ query: print(document), variables: variables ?? {} }),
      });
    } catch (err) {
      throw new NoAnswerError(err);
    }
    let body: { data?: R | null; errors?: { message: string; extensions?: { code?: string; retryAfter?: number } }[] };
    try {
      body = await resp.json();
    } catch (err) {
      throw new NoAnswerError(err);
    }
    if (body.errors?.length) {
      const [e] = body.errors;
      throw new ChatError(e.message, e.extensions?.code ?? "INTERNAL", e.extensions?.retryAfter);
    }
    return body.data as R;
  }

  /** Logs in: the client then acts as the user. */
  async login(login: string, password: string): Promise<Session> {
    const { login: session } = await this.request(LoginDocument, { login, password });
    this.session = session;
    return session;
  }

  /**
   * Exchanges the refresh token for a new pair (once: a refresh token works
   * once). A refresh whose answer was lost may be called again: it sends
   * the same token with the same clientRefreshId, and the server answers
   * with the same pair (within 30 s) instead of ending the session.
   */
  async refresh(): Promise<Session> {
    const token = this.session?.refreshToken;
    if (!token) throw new Error("no refresh token: log in first");
    if (this.pendingRefresh?.token !== token) this.pendingRefresh = { token, id: crypto.randomUUID() };
    const { refreshToken: session } = await this.request(RefreshTokenDocument, { token, clientRefreshId: this.pendingRefresh.id });
    this.session = session;
    return session;
  }

  /**
   * Posts to a room (`room`) or sends to a user (`to`), retried after a lost
   * answer under one clientMessageId, so the server stores it once. Gives up
   * after `attempts` tries; an error the server answered is not retried
   * (but RATE_LIMITED is, after its retryAfter).
   */
  async send(
    target: { room: string } | { to: string },
    content: string,
    options: { clientMessageId?: string; replyTo?: string; attempts?: number } = {},
  ): Promise<MessageFieldsFragment> {
    const clientMessageId = options.clientMessageId ?? crypto.randomUUID();
    const attempts = options.attempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      try {
        if ("room" in target) {
          return (await this.request(PostMessageDocument, { room: target.room, content, clientMessageId, replyTo: options.replyTo })).postMessage;
        }
        return (await this.request(SendDirectMessageDocument, { to: target.to, content, clientMessageId, replyTo: options.replyTo })).sendDirectMessage;
      } catch (err) {
        const retry = err instanceof NoAnswerError || (err instanceof ChatError && (err.code === "RATE_LIMITED" || err.code === "UNAVAILABLE"));
        if (!retry || attempt >= attempts) throw err;
        const wait = err instanceof ChatError && err.retryAfter ? err.retryAfter * 1000 : Math.min(200 * 2 ** attempt, 5000);
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  /**
   * Subscribes and keeps the subscription running: when the socket closes
   * (network, server restart, an expired token: 4401, after which it
   * refreshes), it subscribes again with `after` set to the cursor of the
   * last event it got, and the server replays what was missed. `variables`
   * makes the variables for a cursor; `cursorOf` reads an event's cursor
   * (null for events no log keeps: typing, presence). It ends when the
   * server completes the stream (the room was left or deleted) or on
   * close().
   */
  subscribe<R, V>(
    document: TypedDocumentNode<R, V>,
    variables: (after: string | null) => V,
    cursorOf: (event: R) => string | null | undefined,
    handlers: { next: (event: R) => void; error?: (err: unknown) => void; complete?: () => void; after?: string | null },
  ): { close: () => void; cursor: () => string | null } {
    let cursor = handlers.after ?? null;
    let closed = false;
    let stop: (() => void) | null = null;
    let retries = 0;
    const start = () => {
      if (closed) return;
      stop = this.sockets().subscribe<R>(
        { query: print(document), variables: variables(cursor) as Record<string, unknown> },
        {
          next: (result) => {
            retries = 0;
            if (result.errors?.length) {
              handlers.error?.(new ChatError(result.errors[0].message, String(result.errors[0].extensions?.code ?? "INTERNAL")));
              return;
            }
            const event = result.data as R;
            cursor = cursorOf(event) ?? cursor;
            handlers.next(event);
          },
          error: async (err) => {
            if (closed) return;
            const code = (err as { code?: number })?.code;
            if (Array.isArray(err)) {
              // The subscription was refused (GraphQL errors): not retried.
              const [e] = err as { message: string; extensions?: { code?: string } }[];
              handlers.error?.(new ChatError(e.message, e.extensions?.code ?? "INTERNAL"));
              return;
            }
            try {
              if (code === 4401 && this.session?.refreshToken) await this.refresh();
            } catch (refreshErr) {
              handlers.error?.(refreshErr);
              return;
            }
            retries++;
            setTimeout(start, Math.min(100 * 2 ** retries, 10_000));
          },
          complete: () => {
            if (!closed) handlers.complete?.();
          },
        },
      );
    };
    start();
    return {
      close: () => {
        closed = true;
        stop?.();
      },
      cursor: () => cursor,
    };
  }

  /** Closes the websocket, if one is open; subscriptions that run resume on a new one. */
  async reconnect(): Promise<void> {
    const socket = this.socket;
    this.socket = null;
    socket?.terminate();
  }

  /** Closes the websocket and ends its subscriptions. */
  async dispose(): Promise<void> {
    const socket = this.socket;
    this.socket = null;
    await socket?.dispose();
  }

  // One websocket for the client's subscriptions, opened when the first
  // starts; it sends the current token in connection_init.
  private sockets(): SocketClient {
    this.socket ??= createClient({
      url: this.url.replace(/^http/, "ws"),
      webSocketImpl: this.webSocketImpl,
      connectionParams: () => (this.session ? { token: this.session.token } : {}),
      retryAttempts: 0, // subscribe() resumes with its cursor instead
      lazy: true,
      on: {
        closed: () => {
          // A closed socket is done with: the next subscribe opens another.
          this.socket = null;
        },
      },
    });
    return this.socket;
  }
}
