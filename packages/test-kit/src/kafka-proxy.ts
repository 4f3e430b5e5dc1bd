import net from 'node:net';

/** Kafka's request key for Produce. */
const PRODUCE = 0;

/**
 * A TCP proxy in front of one broker that a test can make lose an answer: the broker gets the
 * request and writes the records, the client never hears back. kafkajs reaches the broker through
 * `socketFactory`, whatever address the cluster's metadata advertises.
 */
export interface KafkaProxy {
  /** kafkajs's `socketFactory` option. */
  socketFactory: (target: { onConnect: () => void }) => net.Socket;
  /**
   * Lets the next Produce request reach the broker, drops its answer and closes that connection, then
   * refuses every connection for `outageMs`, so the client's retries fail too. Resolves when the
   * outage ends.
   */
  loseNextProduceAnswer(outageMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Splits a byte stream into Kafka's size-prefixed frames (a 4-byte big-endian length, then the frame).
 */
function frames(onFrame: (frame: Buffer) => void) {
  let pending = Buffer.alloc(0);
  return (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const size = pending.readInt32BE(0);
      if (pending.length < 4 + size) break;
      onFrame(pending.subarray(0, 4 + size));
      pending = pending.subarray(4 + size);
    }
  };
}

export async function startKafkaProxy(broker: string): Promise<KafkaProxy> {
  const [host, port] = broker.split(':') as [string, string];
  const sockets = new Set<net.Socket>();
  let refusingUntil = 0;
  let loseAnswer: (() => void) | undefined;

  const server = net.createServer((client) => {
    if (Date.now() < refusingUntil) return void client.destroy();
    const upstream = net.connect(Number(port), host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', closeBoth);
    upstream.on('close', closeBoth);

    // Request header: size, api key (int16), api version (int16), correlation id (int32).
    const requestKeys = new Map<number, number>();
    client.on(
      'data',
      frames((frame) => {
        requestKeys.set(frame.readInt32BE(8), frame.readInt16BE(4));
        upstream.write(frame);
      }),
    );
    // Response header: size, correlation id (int32).
    upstream.on(
      'data',
      frames((frame) => {
        const correlationId = frame.readInt32BE(4);
        const apiKey = requestKeys.get(correlationId);
        requestKeys.delete(correlationId);
        if (apiKey === PRODUCE && loseAnswer) {
          const lose = loseAnswer;
          loseAnswer = undefined;
          closeBoth();
          lose();
          return;
        }
        client.write(frame);
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const proxyPort = (server.address() as net.AddressInfo).port;

  return {
    socketFactory: ({ onConnect }) => net.connect({ host: '127.0.0.1', port: proxyPort }, onConnect),
    loseNextProduceAnswer(outageMs) {
      return new Promise<void>((resolve) => {
        loseAnswer = () => {
          refusingUntil = Date.now() + outageMs;
          setTimeout(resolve, outageMs);
        };
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
