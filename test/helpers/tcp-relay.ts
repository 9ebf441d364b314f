/**
 * A TCP relay on loopback in front of a server, for tests that must see or stop what crosses
 * the wire: every byte clients send is kept (`sent`, `text`), and while `hold` is set the
 * connections accepted then get nothing of what the server sends back.
 */
import { connect, createServer, type Socket } from "node:net";

export interface TcpRelay {
  readonly url: string;
  /** Connections accepted while true receive nothing from the server. */
  hold: boolean;
  /** Bytes clients have sent, and the same as latin1 text. */
  sent(): number;
  text(): string;
  close(): Promise<void>;
}

export async function tcpRelay(targetUrl: string): Promise<TcpRelay> {
  const port = Number(new URL(targetUrl).port);
  const seen: Buffer[] = [];
  let sent = 0;
  const sockets = new Set<Socket>();
  const relay = createServer((client) => {
    const upstream = connect(port, "127.0.0.1");
    sockets.add(client).add(upstream);
    client.on("data", (b: Buffer) => {
      sent += b.length;
      seen.push(b);
      upstream.write(b);
    });
    if (!out.hold) upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
  const out: TcpRelay = {
    url: `http://127.0.0.1:${(relay.address() as { port: number }).port}`,
    hold: false,
    sent: () => sent,
    text: () => Buffer.concat(seen).toString("latin1"),
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        relay.close(() => r());
      }),
  };
  return out;
}
