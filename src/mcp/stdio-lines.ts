// Newline-delimited framing of a stdio MCP server's output (docs/mcp.md "stdio servers"): each
// line is one JSON-RPC message. Bounded: a line that grows past `maxLineBytes` is reported
// once (the child is then killed by its owner) and nothing more of it is held, so a child that
// prints a 10 MB line, or never ends one, cannot grow the gateway's memory past the bound.

export class LineSplitter {
  private held: Buffer[] = [];
  private heldBytes = 0;
  private overflowed = false;

  constructor(
    private readonly maxLineBytes: number,
    private readonly onLine: (line: string) => void,
    private readonly onOverflow: () => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.overflowed) return;
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(0x0a, start);
      if (newline === -1) break;
      const part = chunk.subarray(start, newline);
      start = newline + 1;
      if (this.heldBytes + part.length > this.maxLineBytes) return this.overflow();
      const line = this.heldBytes === 0 ? part : Buffer.concat([...this.held, part], this.heldBytes + part.length);
      this.held = [];
      this.heldBytes = 0;
      let text = line.toString('utf8');
      if (text.endsWith('\r')) text = text.slice(0, -1);
      if (text.length > 0) this.onLine(text);
      if (this.overflowed) return;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      if (this.heldBytes + rest.length > this.maxLineBytes) return this.overflow();
      // A copy: the stream may reuse its chunk's memory.
      this.held.push(Buffer.from(rest));
      this.heldBytes += rest.length;
    }
  }

  private overflow(): void {
    this.overflowed = true;
    this.held = [];
    this.heldBytes = 0;
    this.onOverflow();
  }
}

/** A message as one line for a child's stdin: JSON's only raw newlines are whitespace, so they become spaces. */
export function asOneLine(body: Buffer): Buffer {
  if (body.indexOf(0x0a) === -1 && body.indexOf(0x0d) === -1) return body;
  const copy = Buffer.from(body);
  for (let i = 0; i < copy.length; i++) if (copy[i] === 0x0a || copy[i] === 0x0d) copy[i] = 0x20;
  return copy;
}
