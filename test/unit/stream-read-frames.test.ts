import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readSseFrames } from '../../src/stream/sse-reader.ts';
import type { SseFrame } from '../../src/stream/types.ts';

const encoder = new TextEncoder();

async function* bodyOf(chunks: (string | Uint8Array)[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
}

async function collect(body: AsyncIterable<Uint8Array>, maxFrameBytes?: number): Promise<SseFrame[]> {
  const out: SseFrame[] = [];
  for await (const frame of readSseFrames(
    body,
    maxFrameBytes ? { maxFrameBytes, now: () => 0 } : { now: () => 0 },
  )) {
    out.push(frame);
  }
  return out;
}

/** Frames as comparable tuples: [event, data] or ['<oversized>', bytes]. */
function simplify(frames: SseFrame[]): [string, string | number][] {
  return frames.map((f) => (f.type === 'event' ? [f.event, f.data] : ['<oversized>', f.bytes]));
}

function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let start = 0;
  for (const p of points) {
    out.push(bytes.slice(start, p));
    start = p;
  }
  out.push(bytes.slice(start));
  return out;
}

describe('readSseFrames', () => {
  it('parses data, poke and unknown events, multi-line data, comments and CRLF', async () => {
    const text =
      ': a comment the server sends\n\n' +
      'event: data\ndata: {"id":"a","created_at":"2026-01-01T00:00:00Z"}\n\n' +
      'event: poke\r\ndata: {"ts":"2026-01-01T00:00:05Z"}\r\n\r\n' +
      'event: rule\rdata: line one\rdata: line two\r\r' +
      'data: no event name\n: comment inside a frame\ndata: second line\n\n' +
      'event: data\ndata:{"id":"b"}\n\n';
    expect(simplify(await collect(bodyOf([text])))).toEqual([
      ['data', '{"id":"a","created_at":"2026-01-01T00:00:00Z"}'],
      ['poke', '{"ts":"2026-01-01T00:00:05Z"}'],
      ['rule', 'line one\nline two'],
      ['message', 'no event name\nsecond line'],
      ['data', '{"id":"b"}'],
    ]);
  });

  it('gives the same frames whatever byte boundary the body is split at (all 2-way splits, UTF-8 included)', async () => {
    const text =
      'event: data\r\ndata: {"note":"caf\u00e9 \u{1F600} \u4e2d"}\r\n\r\n' +
      'event: poke\rdata: {}\r\r' +
      ': keepalive\n\nevent: data\ndata: {"a":1}\ndata: {"b":2}\n\n';
    const bytes = encoder.encode(text);
    const expected = simplify(await collect(bodyOf([bytes])));
    expect(expected).toHaveLength(3);
    for (let cut = 0; cut <= bytes.length; cut += 1) {
      const frames = await collect(bodyOf([bytes.slice(0, cut), bytes.slice(cut)]));
      expect(simplify(frames), `split at byte ${cut}`).toEqual(expected);
    }
  });

  it('property: any frames, any terminators, any chunking give back the frames sent', async () => {
    const lineText = fc
      .string({ unit: 'binary', maxLength: 20 })
      .map((s) => new TextDecoder().decode(encoder.encode(s)).replace(/[\r\n]/g, ''));
    const frameArb = fc.record({
      event: fc.option(fc.constantFrom('data', 'poke', 'rule', 'connection'), { nil: undefined }),
      lines: fc.array(lineText, { minLength: 1, maxLength: 3 }),
      comment: fc.boolean(),
      eol: fc.constantFrom('\n', '\r\n', '\r'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(frameArb, { maxLength: 6 }),
        fc.array(fc.nat(), { maxLength: 12 }),
        async (frames, cuts) => {
          let text = '';
          for (const f of frames) {
            if (f.comment) text += `: hello${f.eol}`;
            if (f.event) text += `event: ${f.event}${f.eol}`;
            for (const line of f.lines) text += `data: ${line}${f.eol}`;
            text += f.eol;
          }
          const expected = frames.map((f) => [f.event ?? 'message', f.lines.join('\n')]);
          const got = await collect(bodyOf(splitAt(encoder.encode(text), cuts)));
          expect(simplify(got)).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('drops an unterminated last frame (SSE spec) and skips empty chunks', async () => {
    const frames = await collect(
      bodyOf(['', 'event: data\ndata: {"x":1}\n\n', '', 'event: data\ndata: {"cut']),
    );
    expect(simplify(frames)).toEqual([['data', '{"x":1}']]);
  });

  it('turns a frame larger than maxFrameBytes into one oversized item and keeps reading', async () => {
    const big = `event: data\ndata: ${'x'.repeat(5000)}\n\n`;
    const small = 'event: data\ndata: {"ok":true}\n\n';
    // In one chunk.
    const one = await collect(bodyOf([small + big + small]), 1024);
    expect(simplify(one).map((f) => f[0])).toEqual(['data', '<oversized>', 'data']);
    const oversized = one[1];
    expect(oversized?.type).toBe('oversized');
    if (oversized?.type === 'oversized') {
      expect(oversized.event).toBe('data');
      expect(oversized.bytes).toBeGreaterThan(1024);
      expect(oversized.excerpt.startsWith('event: data\ndata: xxx')).toBe(true);
      expect(oversized.excerpt.length).toBeLessThanOrEqual(1024);
    }
    // Across many small chunks.
    const chunks = splitAt(
      encoder.encode(big + small),
      Array.from({ length: 100 }, (_, i) => i * 53),
    );
    expect(simplify(await collect(bodyOf(chunks), 1024)).map((f) => f[0])).toEqual(['<oversized>', 'data']);
  });

  it('keeps memory bounded on an endless line, then recovers at the next frame boundary', async () => {
    const chunk = encoder.encode('y'.repeat(64 * 1024)); // one buffer, yielded again and again
    const totalChunks = 4096; // 256 MiB
    let peak = 0;
    const baseline = process.memoryUsage().heapUsed;
    async function* endless(): AsyncGenerator<Uint8Array> {
      yield encoder.encode('event: data\ndata: ');
      for (let i = 0; i < totalChunks; i += 1) {
        if (i % 256 === 0) peak = Math.max(peak, process.memoryUsage().heapUsed - baseline);
        yield chunk;
      }
      yield encoder.encode('\n\nevent: data\ndata: {"after":true}\n\n');
    }
    const frames = await collect(endless(), 1024 * 1024);
    expect(simplify(frames)).toEqual([
      ['<oversized>', expect.any(Number)],
      ['data', '{"after":true}'],
    ]);
    // 256 MiB went through; buffering it would show here.
    expect(peak).toBeLessThan(64 * 1024 * 1024);
  });

  it('pulls from the body only as the consumer asks (backpressure)', async () => {
    let pulled = 0;
    async function* infinite(): AsyncGenerator<Uint8Array> {
      for (let i = 0; ; i += 1) {
        pulled += 1;
        yield encoder.encode(`event: data\ndata: {"i":${i}}\n\n`);
      }
    }
    const seen: string[] = [];
    for await (const frame of readSseFrames(infinite())) {
      if (frame.type === 'event') seen.push(frame.data);
      if (seen.length === 3) break;
    }
    expect(seen).toEqual(['{"i":0}', '{"i":1}', '{"i":2}']);
    expect(pulled).toBe(3);
  });

  it('stops waiting on a silent body when the signal aborts', async () => {
    const never: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({ next: () => new Promise<IteratorResult<Uint8Array>>(() => {}) }),
    };
    const controller = new AbortController();
    const reading = collect2(readSseFrames(never, { signal: controller.signal }));
    controller.abort(new Error('stop reading'));
    await expect(reading).rejects.toThrow('stop reading');
  });
});

async function collect2(frames: AsyncIterable<SseFrame>): Promise<SseFrame[]> {
  const out: SseFrame[] = [];
  for await (const f of frames) out.push(f);
  return out;
}
