/**
 * One upstream answer read straight off a dispatch handler (undici's interface, h2-origin.ts or undici), with no body stream: on the
 * cold path a Readable and its async iterator cost a promise and a dozen calls per chunk (more
 * of the cache's CPU than the copy of the bytes). Two promises per answer: its headers, its end.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Dispatcher } from "undici";
import type { Dispatch } from "./h2-origin.js";

export interface AnswerRequest {
  readonly origin: string;
  readonly path: string;
  readonly headers: Record<string, string>;
}

function abortError(reason: unknown): Error {
  return reason instanceof Error ? reason : Object.assign(new Error("request aborted"), { name: "AbortError" });
}

export class Answer implements Dispatcher.DispatchHandler {
  statusCode = 0;
  headers: IncomingHttpHeaders = {};
  /** Settles with this answer once its headers are in, or with the request's failure. */
  readonly started: Promise<Answer>;
  #start!: { resolve: (a: Answer) => void; reject: (err: unknown) => void };
  #controller: Dispatcher.DispatchController | undefined;
  // Chunks that came before `read` (headers and data can arrive in one socket read): the flow
  // control window bounds them.
  #queued: Buffer[] = [];
  #onChunk: ((chunk: Buffer) => void) | undefined;
  #end: { resolve: () => void; reject: (err: unknown) => void } | undefined;
  #ended = false;
  #error: unknown;
  #abortWith: Error | undefined;
  #unlisten: (() => void) | undefined;

  /** Sends a GET of `req` on `dispatcher`; `signal`, when given, aborts it. */
  constructor(dispatcher: Dispatch, req: AnswerRequest, signal?: AbortSignal) {
    this.started = new Promise<Answer>((resolve, reject) => (this.#start = { resolve, reject }));
    if (signal) {
      const onAbort = (): void => this.abort(abortError(signal.reason));
      if (signal.aborted) onAbort();
      else {
        signal.addEventListener("abort", onAbort, { once: true });
        // A long-lived signal must not keep a listener per answer it ever saw.
        this.#unlisten = () => signal.removeEventListener("abort", onAbort);
      }
    }
    dispatcher.dispatch({ origin: req.origin, path: req.path, method: "GET", headers: req.headers }, this);
  }

  /** Hands every chunk of the body, in order, to `onChunk`; settles at its end. A throw from `onChunk` aborts the answer with that error. */
  read(onChunk: (chunk: Buffer) => void): Promise<void> {
    this.#onChunk = onChunk;
    const queued = this.#queued;
    this.#queued = [];
    for (const chunk of queued) if (!this.#take(chunk)) break;
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve();
    return new Promise<void>((resolve, reject) => (this.#end = { resolve, reject }));
  }

  /** Ends the request, its body unread (or read in part); the answer then fails with `err`. */
  abort(err: Error = abortError(undefined)): void {
    if (this.#ended || this.#error !== undefined || this.#abortWith) return;
    this.#abortWith = err;
    this.#controller?.abort(err);
  }

  #take(chunk: Buffer): boolean {
    try {
      (this.#onChunk as (chunk: Buffer) => void)(chunk);
      return true;
    } catch (err) {
      this.abort(err instanceof Error ? err : abortError(err));
      return false;
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#abortWith) controller.abort(this.#abortWith);
  }

  onResponseStart(_c: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    this.statusCode = statusCode;
    this.headers = headers;
    this.#start.resolve(this);
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#error !== undefined || this.#abortWith) return;
    if (this.#onChunk) this.#take(chunk);
    else this.#queued.push(chunk);
  }

  onResponseEnd(): void {
    this.#ended = true;
    this.#unlisten?.();
    this.#end?.resolve();
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.#ended || this.#error !== undefined) return;
    this.#error = err;
    this.#unlisten?.();
    this.#queued = [];
    this.#start.reject(err);
    this.#end?.reject(err);
  }
}
