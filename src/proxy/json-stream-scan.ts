// (Over 300 lines: one lexer, whose states share the scan's fields; split further, each part
// would have to expose them to the other. The number grammar is json-number-step.ts.)
//
// A JSON scan over bytes as they arrive, in bounded memory whatever the size: for answers and
// events too large to hold (a `/chat` body over 1 MiB, a `tool_call` event over 64 KiB), whose
// tool calls must still be counted (issue 45, H3-03). It holds no byte of the input: only the
// nesting (a byte per level, up to MAX_SCAN_DEPTH, then a count), the state of the token being
// read, and the few short strings a ScanPath asks for. It validates the JSON grammar as it goes
// (strings, escapes, numbers, literals, nesting, nothing after the end), so `finish()` is true
// exactly when JSON.parse would accept the bytes, but for grammar past MAX_SCAN_DEPTH levels.
//
// What it reports is chosen by a ScanPath: a tree of member names (`keys`) and array elements
// (`items`) from the top-level value down. Each node with an `id` is reported to the ScanSink
// as its value starts (`matched`) and ends (`closed`); a node with `capture` also reports a
// string value (`string`), when its JSON text is at most `capture` bytes. Duplicate members
// are reported in order, so a sink that lets each `matched` reset what it read before keeps
// the last, as JSON.parse does.

import { numberCanEnd, numberStart, numberStep, NUMBER_ENDED } from './json-number-step.js';

export interface ScanPath {
  readonly id?: number;
  readonly keys?: Readonly<Record<string, ScanPath>>;
  readonly items?: ScanPath;
  /** The most bytes of JSON string text (escapes as written, quotes excluded) reported as a string. */
  readonly capture?: number;
}

export interface ScanSink {
  matched(id: number): void;
  /** A string value at a capturing node; null when it is longer than the node's `capture`. */
  string(id: number, text: string | null): void;
  closed(id: number): void;
}

/**
 * Levels whose kind (object, array) is kept, a byte each. Deeper containers are skimmed: only
 * their nesting and strings are followed, not their grammar, so memory stays bounded however
 * deep an answer nests (JSON.parse takes any depth). A body malformed only that deep is read
 * as whole: its tool calls are counted rather than escaped.
 */
export const MAX_SCAN_DEPTH = 1024;
/** Member names longer than this never match a path (no path names one). */
const MAX_KEY_BYTES = 64;
/** Path nodes are kept for the outer levels only: no path goes deeper. */
const MAX_PATH_DEPTH = 8;

const S_VALUE = 0; // a value must start
const S_VALUE_OR_CLOSE = 1; // after `[`
const S_KEY = 2; // after `,` in an object
const S_KEY_OR_CLOSE = 3; // after `{`
const S_COLON = 4;
const S_AFTER_VALUE = 5; // `,` or the container's close
const S_STRING = 6;
const S_ESCAPE = 7; // after a backslash
const S_HEX = 8; // in the four hex digits of \uXXXX
const S_NUMBER = 9;
const S_LITERAL = 10;
const S_END = 11; // after the top-level value: whitespace only
const S_INVALID = 12;
const S_SKIM = 13; // in a container past MAX_SCAN_DEPTH: nesting and strings only
const S_SKIM_STRING = 14;
const S_SKIM_ESCAPE = 15;

const OBJECT = 1;
const ARRAY = 2;

const LITERALS = [Buffer.from('true'), Buffer.from('false'), Buffer.from('null')];

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

export class JsonStreamScan {
  private state = S_VALUE;
  /** Container kind per level (OBJECT or ARRAY), grown as needed up to MAX_SCAN_DEPTH. */
  private kinds = new Uint8Array(64);
  /** The path node of each open container of the outer MAX_PATH_DEPTH levels (null where the path does not reach). */
  private readonly nodes: (ScanPath | null)[] = new Array<ScanPath | null>(MAX_PATH_DEPTH).fill(null);
  private depth = 0;
  /** The node of the value about to start (or being read). */
  private valueNode: ScanPath | null;
  // The string being read: a member name (matched against the object's path) or a value.
  private stringIsKey = false;
  private capturing = false;
  private captureLimit = 0;
  private captured: Buffer;
  private capturedBytes = 0;
  private capturedEscape = false;
  private hexLeft = 0;
  private numberState = 0;
  private literal: Buffer = LITERALS[0]!;
  private literalAt = 0;
  /** Open containers past MAX_SCAN_DEPTH, skimmed. */
  private skimDepth = 0;

  constructor(
    root: ScanPath,
    private readonly sink: ScanSink,
  ) {
    this.valueNode = root;
    this.captured = Buffer.allocUnsafe(Math.max(MAX_KEY_BYTES, largestCapture(root)));
  }

  /** Reads the next bytes of the JSON text. */
  push(bytes: Uint8Array): void {
    let i = 0;
    const length = bytes.length;
    while (i < length && this.state !== S_INVALID) {
      const c = bytes[i]!;
      switch (this.state) {
        case S_STRING:
          i = this.readString(bytes, i);
          continue;
        case S_ESCAPE:
          if (c === 0x75) {
            this.hexLeft = 4;
            this.state = S_HEX;
          } else if (c === 0x22 || c === 0x5c || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e || c === 0x72 || c === 0x74) {
            this.state = S_STRING;
          } else {
            this.state = S_INVALID;
            continue;
          }
          this.keep(c);
          break;
        case S_HEX:
          if (!isHex(c)) {
            this.state = S_INVALID;
            continue;
          }
          this.keep(c);
          if (--this.hexLeft === 0) this.state = S_STRING;
          break;
        case S_NUMBER: {
          const next = numberStep(this.numberState, c);
          if (next >= 0) {
            this.numberState = next;
            break;
          }
          // Ended before c (read again as what follows), or not a number.
          if (next === NUMBER_ENDED) this.valueEnded();
          else this.state = S_INVALID;
          continue;
        }
        case S_SKIM:
          if (c === 0x22) this.state = S_SKIM_STRING;
          else if (c === 0x7b || c === 0x5b) this.skimDepth += 1;
          else if ((c === 0x7d || c === 0x5d) && --this.skimDepth === 0) this.valueEnded();
          break;
        case S_SKIM_STRING:
          if (c === 0x22) this.state = S_SKIM;
          else if (c === 0x5c) this.state = S_SKIM_ESCAPE;
          break;
        case S_SKIM_ESCAPE:
          this.state = S_SKIM_STRING;
          break;
        case S_LITERAL:
          if (c !== this.literal[this.literalAt]) {
            this.state = S_INVALID;
            continue;
          }
          if (++this.literalAt === this.literal.length) this.valueEnded();
          break;
        default:
          if (!isSpace(c)) this.readStructure(c);
      }
      i += 1;
    }
  }

  /** Whether the bytes read were one whole JSON text. */
  finish(): boolean {
    if (this.state === S_NUMBER && this.depth === 0 && numberCanEnd(this.numberState)) this.valueEnded();
    return this.state === S_END;
  }

  private readStructure(c: number): void {
    switch (this.state) {
      case S_VALUE:
        this.startValue(c);
        return;
      case S_VALUE_OR_CLOSE:
        if (c === 0x5d) this.closeContainer(ARRAY);
        else this.startValue(c);
        return;
      case S_KEY_OR_CLOSE:
        if (c === 0x7d) this.closeContainer(OBJECT);
        else this.startKey(c);
        return;
      case S_KEY:
        this.startKey(c);
        return;
      case S_COLON:
        this.state = c === 0x3a ? S_VALUE : S_INVALID;
        return;
      case S_AFTER_VALUE: {
        const kind = this.kinds[this.depth - 1];
        if (c === 0x2c) {
          if (kind === OBJECT) {
            this.state = S_KEY;
          } else {
            this.valueNode = this.nodeAt(this.depth - 1)?.items ?? null;
            this.state = S_VALUE;
          }
        } else if (c === 0x7d && kind === OBJECT) {
          this.closeContainer(OBJECT);
        } else if (c === 0x5d && kind === ARRAY) {
          this.closeContainer(ARRAY);
        } else {
          this.state = S_INVALID;
        }
        return;
      }
      default:
        // S_END: only whitespace may follow the top-level value.
        this.state = S_INVALID;
    }
  }

  private startValue(c: number): void {
    const node = this.valueNode;
    if (node?.id !== undefined) this.sink.matched(node.id);
    if (c === 0x7b || c === 0x5b) {
      if (this.depth >= MAX_SCAN_DEPTH) {
        this.skimDepth = 1;
        this.state = S_SKIM;
        return;
      }
      if (this.depth === this.kinds.length) {
        const grown = new Uint8Array(Math.min(MAX_SCAN_DEPTH, this.kinds.length * 2));
        grown.set(this.kinds);
        this.kinds = grown;
      }
      const kind = c === 0x7b ? OBJECT : ARRAY;
      this.kinds[this.depth] = kind;
      if (this.depth < MAX_PATH_DEPTH) this.nodes[this.depth] = node;
      this.depth += 1;
      this.valueNode = kind === ARRAY ? (node?.items ?? null) : null;
      this.state = kind === OBJECT ? S_KEY_OR_CLOSE : S_VALUE_OR_CLOSE;
      return;
    }
    if (c === 0x22) {
      this.startString(false, node?.capture);
      return;
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      this.state = S_NUMBER;
      this.numberState = numberStart(c);
      return;
    }
    const literal = c === 0x74 ? LITERALS[0] : c === 0x66 ? LITERALS[1] : c === 0x6e ? LITERALS[2] : undefined;
    if (literal === undefined) {
      this.state = S_INVALID;
      return;
    }
    this.literal = literal;
    this.literalAt = 1;
    this.state = S_LITERAL;
  }

  private startKey(c: number): void {
    if (c !== 0x22) {
      this.state = S_INVALID;
      return;
    }
    this.startString(true, this.nodeAt(this.depth - 1)?.keys === undefined ? undefined : MAX_KEY_BYTES);
  }

  private startString(isKey: boolean, capture: number | undefined): void {
    this.stringIsKey = isKey;
    this.capturing = capture !== undefined;
    this.captureLimit = capture ?? 0;
    this.capturedBytes = 0;
    this.capturedEscape = false;
    this.state = S_STRING;
  }

  /** From `i` in a string: to its end, an escape or the end of the bytes; returns where reading goes on. */
  private readString(bytes: Uint8Array, i: number): number {
    const length = bytes.length;
    for (; i < length; i++) {
      const c = bytes[i]!;
      if (c === 0x22) {
        this.stringEnded();
        return i + 1;
      }
      if (c < 0x20) {
        this.state = S_INVALID;
        return i;
      }
      if (c === 0x5c) {
        this.capturedEscape = true;
        this.keep(c);
        this.state = S_ESCAPE;
        return i + 1;
      }
      if (this.capturing) this.keep(c);
    }
    return i;
  }

  private keep(c: number): void {
    if (!this.capturing) return;
    if (this.capturedBytes < this.captureLimit && this.capturedBytes < this.captured.length) this.captured[this.capturedBytes] = c;
    this.capturedBytes += 1;
  }

  private capturedText(): string | null {
    if (this.capturedBytes > this.captureLimit || this.capturedBytes > this.captured.length) return null;
    const raw = this.captured.toString('utf8', 0, this.capturedBytes);
    return this.capturedEscape ? (JSON.parse(`"${raw}"`) as string) : raw;
  }

  private stringEnded(): void {
    if (this.stringIsKey) {
      const keys = this.nodeAt(this.depth - 1)?.keys;
      const name = keys === undefined ? null : this.capturedText();
      this.valueNode = name !== null && Object.hasOwn(keys!, name) ? keys![name]! : null;
      this.state = S_COLON;
      return;
    }
    const node = this.valueNode;
    if (node?.id !== undefined && node.capture !== undefined) this.sink.string(node.id, this.capturedText());
    this.valueEnded();
  }

  private valueEnded(): void {
    const node = this.valueNode;
    if (node?.id !== undefined) this.sink.closed(node.id);
    this.afterValue();
  }

  private closeContainer(kind: number): void {
    if (this.kinds[this.depth - 1] !== kind) {
      this.state = S_INVALID;
      return;
    }
    this.depth -= 1;
    const node = this.nodeAt(this.depth);
    if (this.depth < MAX_PATH_DEPTH) this.nodes[this.depth] = null;
    if (node?.id !== undefined) this.sink.closed(node.id);
    this.afterValue();
  }

  private nodeAt(level: number): ScanPath | null {
    return level < MAX_PATH_DEPTH ? this.nodes[level]! : null;
  }

  private afterValue(): void {
    this.state = this.depth === 0 ? S_END : S_AFTER_VALUE;
    // In an array, the next element's node is set at its comma; in an object, at its key.
    this.valueNode = null;
  }
}

function largestCapture(path: ScanPath): number {
  let largest = path.capture ?? 0;
  if (path.items !== undefined) largest = Math.max(largest, largestCapture(path.items));
  if (path.keys !== undefined) for (const child of Object.values(path.keys)) largest = Math.max(largest, largestCapture(child));
  return largest;
}
