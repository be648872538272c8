import * as assert from 'node:assert/strict';
import { type DecodedLine, LineDecoder, decodeAll } from '../../../src/core/stream/lineDecoder';

const json = (lines: DecodedLine[]): unknown[] => lines.flatMap((l) => (l.kind === 'json' ? [l.value] : []));

describe('line decoding', () => {
  it('decodes one JSON object per line', () => {
    const { lines, stats } = decodeAll('{"a":1}\n{"b":2}\n');
    assert.deepEqual(json(lines), [{ a: 1 }, { b: 2 }]);
    assert.equal(stats.jsonLines, 2);
  });

  it('joins a line split across chunks', () => {
    const out: DecodedLine[] = [];
    const d = new LineDecoder((l) => out.push(l));
    for (const piece of ['{"ty', 'pe":"a', 'ssistant"}', '\n{"x"', ':1}\n']) d.push(piece);
    d.end();
    assert.deepEqual(json(out), [{ type: 'assistant' }, { x: 1 }]);
  });

  it('keeps a multi-byte UTF-8 character that a chunk boundary cuts in half', () => {
    const bytes = Buffer.from('{"text":"You’ve hit your limit · resets 8pm 🎉"}\n', 'utf8');
    const cut = bytes.indexOf(Buffer.from('’')) + 1;
    const out: DecodedLine[] = [];
    const d = new LineDecoder((l) => out.push(l));
    d.push(bytes.subarray(0, cut));
    d.push(bytes.subarray(cut, cut + 1));
    d.push(bytes.subarray(cut + 1));
    d.end();
    assert.deepEqual(json(out), [{ text: 'You’ve hit your limit · resets 8pm 🎉' }]);
  });

  it('strips CRLF line endings', () => {
    assert.deepEqual(json(decodeAll('{"a":1}\r\n{"b":2}\r\n').lines), [{ a: 1 }, { b: 2 }]);
  });

  it('skips blank and whitespace-only lines without counting them as noise', () => {
    const { lines, stats } = decodeAll('\n   \n{"a":1}\n\t\n\n');
    assert.equal(lines.length, 1);
    assert.equal(stats.nonJsonLines, 0);
  });

  it('decodes a last line that has no newline at EOF', () => {
    assert.deepEqual(json(decodeAll('{"a":1}\n{"last":true}').lines), [{ a: 1 }, { last: true }]);
  });

  it('counts non-JSON lines and keeps them as text, never throwing', () => {
    const { lines, stats } = decodeAll('[INFO] banner\n{"a":1}\n{"broken":\nnpm WARN x\n');
    assert.deepEqual(
      lines.map((l) => l.kind),
      ['text', 'json', 'text', 'text'],
    );
    assert.equal(stats.nonJsonLines, 3);
    assert.equal(stats.malformedJsonLines, 1);
  });

  it('treats JSON that is not an object (a number, an array) as non-JSON', () => {
    const { stats } = decodeAll('42\n[1,2]\n"s"\n');
    assert.equal(stats.jsonLines, 0);
    assert.equal(stats.nonJsonLines, 3);
  });

  it('keeps only the latest non-JSON lines, each cut to the sample size', () => {
    const noise = Array.from({ length: 50 }, (_, i) => `noise ${i} ${'x'.repeat(5000)}`).join('\n');
    const { stats } = decodeAll(noise, { nonJsonSampleSize: 5, nonJsonSampleChars: 100 });
    assert.equal(stats.nonJsonLines, 50);
    assert.equal(stats.nonJsonSamples.length, 5);
    assert.ok(stats.nonJsonSamples[4]!.startsWith('noise 49'));
    assert.ok(stats.nonJsonSamples.every((s) => s.length <= 101));
  });

  it('drops a line longer than the limit, counts it, and decodes the next line', () => {
    const long = `{"big":"${'x'.repeat(1000)}"}`;
    const { lines, stats } = decodeAll(`${long}\n{"after":1}\n`, { maxLineBytes: 100 });
    assert.deepEqual(json(lines), [{ after: 1 }]);
    assert.equal(stats.droppedLongLines, 1);
  });

  it('drops an over-long line that arrives in many chunks without keeping its pieces', () => {
    const out: DecodedLine[] = [];
    const d = new LineDecoder((l) => out.push(l), { maxLineBytes: 1000 });
    d.push('{"big":"');
    for (let i = 0; i < 100; i++) d.push('y'.repeat(100));
    d.push('"}\n{"after":2}\n');
    d.end();
    assert.deepEqual(json(out), [{ after: 2 }]);
    assert.equal(d.stats.droppedLongLines, 1);
  });

  it('decodes a line of several megabytes delivered in small chunks', () => {
    const payload = 'z'.repeat(8 * 1024 * 1024);
    const bytes = Buffer.from(`{"p":"${payload}"}\n`);
    const out: DecodedLine[] = [];
    const d = new LineDecoder((l) => out.push(l));
    for (let i = 0; i < bytes.length; i += 4096) d.push(bytes.subarray(i, i + 4096));
    d.end();
    assert.equal((json(out)[0] as { p: string }).p.length, payload.length);
  });

  it('numbers lines from 1, counting blank lines', () => {
    const { lines } = decodeAll('{"a":1}\n\n{"b":2}\n');
    assert.deepEqual(
      lines.map((l) => l.lineNo),
      [1, 3],
    );
  });
});
