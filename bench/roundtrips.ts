/**
 * Counts the client's round trips to Redis in a benchmark process, for every library alike, by
 * wrapping the one method each client library sends commands through. A command is one round trip;
 * a pipeline or MULTI/EXEC block (sent in one write, answered together) is one round trip in all.
 * Pub/sub messages received are not round trips. Every command is also offered to `onCommand`, so a
 * lock implementation can say which commands are its "tries".
 */
import type { Redis } from 'ioredis';

export interface CommandCounter {
  roundTrips: number;
  /** Called for every command sent: its name (lower case) and its first argument. */
  onCommand: ((name: string, firstArg: string | undefined) => void) | undefined;
}

export const counter: CommandCounter = { roundTrips: 0, onCommand: undefined };

type Method = (...args: unknown[]) => unknown;

function ownerOf(object: object, method: string): Record<string, Method> | undefined {
  for (let proto: object | null = object; proto; proto = Object.getPrototypeOf(proto)) {
    if (Object.hasOwn(proto, method)) return proto as Record<string, Method>;
  }
  return undefined;
}

const patched = new WeakSet<object>();

/** Wraps ioredis' `sendCommand` (every instance, subscribers included) and `Pipeline#exec`. */
export function countIoRedis(sample: Redis): void {
  const redisProto = ownerOf(sample, 'sendCommand');
  if (redisProto && !patched.has(redisProto)) {
    patched.add(redisProto);
    const original = redisProto.sendCommand as Method;
    redisProto.sendCommand = function (this: unknown, ...args: unknown[]) {
      const command = args[0] as { name: string; args: unknown[] };
      // A second argument (the stream) means the command is part of a pipeline written in one go.
      if (args[1] === undefined) counter.roundTrips += 1;
      counter.onCommand?.(command.name.toLowerCase(), stringArg(command.args[0]));
      return original.apply(this, args);
    };
  }
  const pipelineProto = ownerOf(sample.pipeline(), 'exec');
  if (pipelineProto && !patched.has(pipelineProto)) {
    patched.add(pipelineProto);
    const original = pipelineProto.exec as Method;
    pipelineProto.exec = function (this: unknown, ...args: unknown[]) {
      counter.roundTrips += 1;
      return original.apply(this, args);
    };
  }
}

/** Wraps node-redis' `sendCommand` (v4 and v5), which every command method goes through. */
export function countNodeRedis(sample: object): void {
  const proto = ownerOf(sample, 'sendCommand');
  if (!proto || patched.has(proto)) return;
  patched.add(proto);
  const original = proto.sendCommand as Method;
  proto.sendCommand = function (this: unknown, ...args: unknown[]) {
    const argv = args[0] as unknown[];
    counter.roundTrips += 1;
    counter.onCommand?.(String(argv[0]).toLowerCase(), stringArg(argv[1]));
    return original.apply(this, args);
  };
}

function stringArg(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return undefined;
}
